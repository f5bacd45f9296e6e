/**
 * Which program starts the host when `oma.host.command` is not set: the order
 * PATH, `.venv/bin/oma-host`, `venv/bin/oma-host` (each workspace folder in
 * turn), over a temporary tree of fake `oma-host` scripts that say who they are.
 */

import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { after, test } from 'node:test';

import { findHostCommand } from '../src/core/hostCommand';

const root = mkdtempSync(join(tmpdir(), 'oma-host-command-'));
after(() => rmSync(root, { recursive: true, force: true }));

/** An executable `oma-host` at `path` that prints `marker`. */
function fakeHost(path: string, marker: string, mode = 0o755): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, `#!/bin/sh\necho ${marker}\n`);
  chmodSync(path, mode);
  return path;
}

/** What the chosen program prints when run: which fake it is. */
function run(command: string): string {
  const done = spawnSync(command, [], { encoding: 'utf8' });
  assert.equal(done.status, 0, `${command}: ${done.error?.message ?? done.stderr}`);
  return done.stdout.trim();
}

const onPath = join(root, 'path-bin');
const notExecutable = join(root, 'path-plain');
const asFolder = join(root, 'path-folder');
const workspace = join(root, 'workspace');
const second = join(root, 'second');
fakeHost(join(onPath, 'oma-host'), 'path');
fakeHost(join(notExecutable, 'oma-host'), 'plain', 0o644);
mkdirSync(join(asFolder, 'oma-host'), { recursive: true });
mkdirSync(second, { recursive: true });
const emptyPath = [notExecutable, asFolder, join(root, 'missing')].join(delimiter);

test('oma.host.command, when set, is used as written (trimmed)', () => {
  fakeHost(join(workspace, '.venv', 'bin', 'oma-host'), 'dot-venv');
  const found = findHostCommand('  /opt/oma/bin/oma-host ', [workspace], onPath);
  assert.deepEqual(found, { command: '/opt/oma/bin/oma-host', how: 'oma.host.command' });
});

test('not set: oma-host on PATH comes first', () => {
  const found = findHostCommand('', [workspace], [emptyPath, onPath].join(delimiter));
  assert.equal(found.command, join(onPath, 'oma-host'));
  assert.equal(run(found.command), 'path');
});

test("not on PATH (a plain file or a folder named oma-host do not count): the workspace's .venv", () => {
  const found = findHostCommand('', [second, workspace], emptyPath);
  assert.equal(found.command, join(workspace, '.venv', 'bin', 'oma-host'));
  assert.equal(run(found.command), 'dot-venv');
  assert.match(found.how, /found in the workspace/);
});

test('.venv before venv in a folder; an earlier folder before a later one', () => {
  fakeHost(join(workspace, 'venv', 'bin', 'oma-host'), 'venv');
  assert.equal(run(findHostCommand('', [workspace], emptyPath).command), 'dot-venv');
  fakeHost(join(second, 'venv', 'bin', 'oma-host'), 'second-venv');
  assert.equal(run(findHostCommand('', [second, workspace], emptyPath).command), 'second-venv');
  rmSync(join(workspace, '.venv'), { recursive: true });
  assert.equal(run(findHostCommand('', [workspace], emptyPath).command), 'venv');
});

test('found nowhere: plain oma-host, and every place tried is named', () => {
  const found = findHostCommand(' ', [join(root, 'nothing')], undefined);
  assert.equal(found.command, 'oma-host');
  const nothing = join(root, 'nothing');
  assert.equal(
    found.how,
    'not found: oma.host.command is not set and no executable oma-host is in PATH, ' +
      `${join(nothing, '.venv', 'bin', 'oma-host')}, ${join(nothing, 'venv', 'bin', 'oma-host')}`,
  );
});
