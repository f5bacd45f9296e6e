"""The VS Code extension as a ``.vsix``: ``npm run package`` in editors/vscode
builds it with ``@vscode/vsce`` (its ``vscode:prepublish`` compiles with tsc
first), so every run of the suite proves the extension still packages.

A .vsix is a zip whose ``extension/`` folder is what VS Code installs: the
manifest, the compiled code its ``main`` names, and the runtime npm
dependencies, without the TypeScript sources, the tests or the dev packages.
"""

from __future__ import annotations

import json
import os
import zipfile

from tests.editors.helpers import VSCODE_DIR, ensure_npm_packages, run_client_tests
from tests.npm_packages import npm

TIMEOUT_S = 300


def test_the_extension_packages_as_a_vsix() -> None:
    ensure_npm_packages(VSCODE_DIR, "@vscode/vsce/package.json")
    manifest = json.loads((VSCODE_DIR / "package.json").read_text())
    vsix = VSCODE_DIR / f"{manifest['name']}-{manifest['version']}.vsix"
    vsix.unlink(missing_ok=True)
    compiled = VSCODE_DIR / "out" / "src" / "extension.js"
    compiled.unlink(missing_ok=True)  # the package script must build it

    run_client_tests([npm(), "run", "package"], VSCODE_DIR, dict(os.environ), TIMEOUT_S)

    assert zipfile.is_zipfile(vsix), f"{vsix} is not a zip"
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        packaged = json.loads(archive.read("extension/package.json"))
        main = archive.read("extension/out/src/extension.js").decode()
    assert (packaged["name"], packaged["version"]) == (manifest["name"], manifest["version"])
    assert "extension/" + os.path.normpath(packaged["main"]) in names
    assert "exports.activate = activate" in main
    for dependency in manifest["dependencies"]:
        assert f"extension/node_modules/{dependency}/package.json" in names, dependency
    left_out = [
        name
        for name in names
        if name.startswith(("extension/src/", "extension/test/", "extension/out/test/"))
        or "/node_modules/typescript/" in name
        or "/node_modules/@vscode/vsce/" in name
        or name.endswith(".map")
        or (name.endswith(".ts") and "/node_modules/" not in name)
    ]
    assert left_out == [], left_out
    assert "extension/LICENSE.txt" in names
