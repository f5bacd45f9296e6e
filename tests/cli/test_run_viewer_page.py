"""The run viewer's page in headless Chromium (Debian's, driven by
Playwright; no browser download), served by a real ``oma-host runs serve``
on a state directory made by real runs (``recorded``): the list and its
filters, a run's timeline with a bar per span it recorded, a team run's
tasks as their graph, a step's detail, markup in the data shown as text,
and the page refused without its token. Leaves a screenshot of a run's
timeline; with ``OMA_DOCS_IMAGES=1`` it is written to
docs/images/run-viewer.png."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from oma_host.orchestration.run_records import RunRecords
from tests.cli.recorded_runs import (
    CAPTURED_FILE,
    CAPTURED_PROMPT,
    CAPTURED_REPLY,
    CAPTURED_SECOND,
    CAPTURED_SECOND_REPLY,
    DIAMOND,
    KEY,
    MARKUP_AGENT,
    MARKUP_INPUT,
)
from tests.cli.viewer_helpers import Viewer, serve_viewer
from tests.headless_chromium import CHROMIUM, require_chromium

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

# Generous: catches a hang; the page answers in milliseconds.
UI_TIMEOUT_MS = 30_000
DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "run-viewer.png"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    require_chromium("the run viewer's page tests")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(
            executable_path=CHROMIUM, args=["--no-sandbox"], headless=True
        )
        yield launched
        launched.close()


@pytest.fixture(scope="module")
def viewer(
    recorded: tuple[Path, dict[str, str]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Viewer]:
    state, _runs = recorded
    with serve_viewer(state, tmp_path_factory.mktemp("viewer-page") / "stderr") as running:
        yield running


@pytest.fixture
def page(browser: Browser, viewer: Viewer) -> Iterator[Page]:
    """The page opened at the URL the command printed, in a fresh context."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    opened = context.new_page()
    opened.set_default_timeout(UI_TIMEOUT_MS)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.goto(viewer.url)
    opened.wait_for_selector(".run-row")
    yield opened
    context.close()
    assert errors == [], errors


def _rows(page: Page) -> list[str]:
    return [str(row.get_attribute("data-run-id")) for row in page.locator(".run-row").all()]


def _wait_rows(page: Page, expected: set[str]) -> None:
    """Wait until the list shows exactly the runs ``expected`` (the answer to
    the last filter: one to an earlier filter may be showing first)."""
    page.wait_for_function(
        "ids => { const shown = [...document.querySelectorAll('.run-row')]"
        ".map(row => row.dataset.runId).sort();"
        " return JSON.stringify(shown) === JSON.stringify(ids); }",
        arg=sorted(expected),
    )


def _open_run(page: Page, run_id: str) -> None:
    page.locator(f'.run-row[data-run-id="{run_id}"]').click()
    page.wait_for_function(
        "id => { const pane = document.getElementById('run-pane');"
        " return !pane.hidden && pane.dataset.runId === id; }",
        arg=run_id,
    )


def _spans(state: Path, run_id: str) -> list[Any]:
    with RunRecords(state) as records:
        run = records.run(run_id)
        assert run is not None
        return [span for node in records.span_tree(run) for _, span in node.walk()]


def _detail(page: Page, label: str, nth: int = 0) -> None:
    page.locator(".span-row", has=page.locator(".label", has_text=label)).nth(nth).click()
    page.wait_for_selector("#detail:not([hidden]) .detail-name")


def _section(page: Page, title: str) -> str:
    section = page.locator("#detail .detail-section", has=page.locator(f"h3:text-is('{title}')"))
    return section.inner_text()


def _grouped(run_ids_and_sessions: list[tuple[str, str | None]]) -> list[str]:
    """Newest-first runs as the page orders them: a session's runs together,
    at the place of its newest run."""
    order: list[list[str]] = []
    groups: dict[str, list[str]] = {}
    for run_id, session in run_ids_and_sessions:
        if session is None:
            order.append([run_id])
        elif session in groups:
            groups[session].append(run_id)
        else:
            groups[session] = [run_id]
            order.append(groups[session])
    return [run_id for group in order for run_id in group]


def _cell(page: Page, run_id: str, column: str) -> str:
    return page.locator(f'.run-row[data-run-id="{run_id}"] td.{column}').inner_text()


def test_the_page_lists_every_run_with_its_columns_newest_first(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    state, runs = recorded
    with RunRecords(state) as records:
        listed = [(row.run_id, row.session_id) for row in records.list_runs()]
    assert _rows(page) == _grouped(listed) and {r for r, _ in listed} == set(runs.values())
    tools = runs["tools"]
    cells = {
        column: _cell(page, tools, column)
        for column in ("agent", "status", "turns", "tokens", "cost", "duration", "run-id")
    }
    assert cells == {
        "agent": "coder",
        "status": "ok",
        "turns": "2",
        "tokens": "30",
        "cost": "-",
        "duration": cells["duration"],
        "run-id": tools,
    }
    assert cells["duration"].endswith("ms") or cells["duration"].endswith(" s")
    assert page.locator(f'.run-row[data-run-id="{runs["failed"]}"] .badge').inner_text() == "error"
    assert page.inner_text("#load-state") == f"{len(runs)} runs"


def test_a_session_s_runs_are_grouped_under_it_each_with_its_prompt(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    order = page.eval_on_selector_all(
        "#runs tbody tr",
        "rows => rows.map(r => r.dataset.sessionId ? `session ${r.dataset.sessionId}`"
        " : r.dataset.runId)",
    )
    at = order.index("session sess-captured")
    assert order[at + 1 : at + 3] == [runs["captured_2"], runs["captured"]]
    header = page.locator('.session-row[data-session-id="sess-captured"]').inner_text()
    assert "sess-captured" in header and "2 runs" in header
    assert order[order.index("session sess-1") + 1] == runs["tools"]
    # Each run of the captured session shows what it was asked.
    assert _cell(page, runs["captured"], "prompt") == CAPTURED_PROMPT
    assert _cell(page, runs["captured_2"], "prompt") == CAPTURED_SECOND
    # A run whose text was not captured shows its method, marked as no prompt.
    assert _cell(page, runs["failed"], "prompt") == "agent/run"
    assert page.locator(f'.run-row[data-run-id="{runs["failed"]}"] td.prompt.none').count() == 1
    # The text filter finds a run by its prompt.
    page.fill("#filter-text", "which port")
    _wait_rows(page, {runs["captured"], runs["captured_2"]})


def test_the_filters_narrow_the_list(page: Page, recorded: tuple[Path, dict[str, str]]) -> None:
    _state, runs = recorded
    page.select_option("#filter-agent", "coder")
    _wait_rows(page, {runs["tools"]})
    page.select_option("#filter-agent", "")
    page.select_option("#filter-status", "cancelled")
    _wait_rows(page, {runs["cancelled"]})
    page.select_option("#filter-status", "")
    page.fill("#filter-text", "x-api-key")  # the failed run's error, in any case
    _wait_rows(page, {runs["failed"]})
    page.fill("#filter-text", "team")
    _wait_rows(page, {runs["team"], runs["diamond"], runs["team_failed"]})
    page.select_option("#filter-agent", "team")
    page.fill("#filter-text", "diamond")
    _wait_rows(page, {runs["diamond"]})
    assert page.inner_text("#load-state") == "1 run"
    page.fill("#filter-text", "nothing-matches-this")
    _wait_rows(page, set())
    assert page.locator("#runs-empty").is_visible()
    page.fill("#filter-text", "")
    page.select_option("#filter-agent", "")
    _wait_rows(page, set(runs.values()))
    assert page.locator("#runs-empty").is_hidden()


def test_a_run_s_timeline_has_a_bar_per_span_nested_by_parent(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    state, runs = recorded
    for name in ("tools", "delegation", "compaction", "failed", "diamond"):
        _open_run(page, runs[name])
        spans = _spans(state, runs[name])
        bars = page.locator("#timeline .bar")
        assert bars.count() == len(spans), name
        labels = page.locator("#timeline .span-row .label").all_inner_texts()
        assert labels == [span.name for span in spans], name
    # The delegate's run is indented under the delegation under its tool call.
    _open_run(page, runs["delegation"])
    indents = page.eval_on_selector_all(
        "#timeline .span-row .label", "labels => labels.map(l => parseFloat(l.style.paddingLeft))"
    )
    assert indents[:5] == sorted(indents[:5]) and indents[5] == indents[1]
    assert indents[0] < indents[1] < indents[3] < indents[4]
    # Each bar lies within the axis, its parent's bar spanning it.
    boxes = [box for box in (bar.bounding_box() for bar in page.locator("#timeline .bar").all())]
    assert all(box is not None for box in boxes)
    root = boxes[0]
    assert root is not None
    for box in boxes[1:]:
        assert box is not None
        assert (
            root["x"] - 1 <= box["x"] and box["x"] + box["width"] <= root["x"] + root["width"] + 1
        )
    # An error bar says so.
    _open_run(page, runs["failed"])
    assert page.locator("#timeline .bar.status-error").count() == 2


def test_a_team_run_shows_its_tasks_as_their_dependency_graph(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    _open_run(page, runs["diamond"])
    assert page.locator("#graph-box").is_visible()
    nodes = page.locator("#graph .node")
    assert sorted(str(n.get_attribute("data-task-id")) for n in nodes.all()) == sorted(DIAMOND)
    edges = {
        (str(edge.get_attribute("data-from")), str(edge.get_attribute("data-to")))
        for edge in page.locator("#graph .edge").all()
    }
    assert edges == {(before, task) for task, deps in DIAMOND.items() for before in deps}
    assert page.locator("#graph .edge").count() == len(edges)
    x = {
        str(node.get_attribute("data-task-id")): (node.bounding_box() or {"x": -1.0})["x"]
        for node in nodes.all()
    }
    assert x["plan"] < x["left"] == x["right"] < x["join"]  # a column per depth
    assert page.locator('#graph .node[data-task-id="join"] .task-meta').text_content() == (
        "echoer · completed"
    )
    # A node's click shows its task's step.
    page.locator('#graph .node[data-task-id="left"]').click()
    page.wait_for_function(
        "() => document.querySelector('#detail .detail-name')?.textContent === 'task left'"
    )
    assert "oma.task.depends_on" in _section(page, "Attributes")
    assert page.locator("#timeline .span-row.selected .label").inner_text() == "task left"
    # The chain: two tasks, one edge; a run that is not a team's has no graph.
    _open_run(page, runs["team"])
    assert page.locator("#graph .node").count() == 2
    assert page.locator("#graph .edge").count() == 1
    _open_run(page, runs["tools"])
    assert page.locator("#graph-box").is_hidden()
    assert page.locator("#graph .node").count() == 0


def test_a_step_s_detail_shows_its_input_permission_error_and_scores(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    _open_run(page, runs["tools"])
    assert page.locator("#detail").is_hidden()
    _detail(page, "execute_tool file_read", nth=1)
    assert page.inner_text("#detail .detail-name") == "execute_tool file_read"
    assert json.loads(page.inner_text("#detail .tool-input")) == {"path": "more.txt"}
    assert page.inner_text("#detail .permission") == "allow by default"
    attributes = _section(page, "Attributes")
    assert "gen_ai.tool.call.id\tcall_2" in attributes
    _detail(page, "chat sim-1")
    assert "gen_ai.response.finish_reasons" in _section(page, "Attributes")
    assert page.locator("#detail .tool-input").count() == 0
    page.click("#detail .close")
    assert page.locator("#detail").is_hidden()
    # A failed run: the error on the step, and the run's message on its top step.
    _open_run(page, runs["failed"])
    _detail(page, "chat sim-1")
    assert page.inner_text("#detail .error-type") == "auth"
    assert "http.response.status_code\t401" in _section(page, "Attributes")
    _detail(page, "invoke_agent failing")
    assert "invalid x-api-key" in page.inner_text("#detail .error-text")
    # An evaluated run: its scores in the summary and on its top step.
    _open_run(page, runs["evaluated"])
    assert "contains\t1" in page.inner_text("#run-summary .evaluations")
    _detail(page, "invoke_agent pinger")
    assert "contains\t1" in _section(page, "Evaluation scores")
    # The address names the run: reloading it shows that run again.
    assert page.evaluate("location.hash") == f"#run={runs['evaluated']}"
    page.reload()
    page.wait_for_selector("#timeline .span-row")
    assert page.locator(".run-row.selected").get_attribute("data-run-id") == runs["evaluated"]


def test_markup_in_an_agent_name_or_a_tool_input_shows_as_text(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    row = page.locator(f'.run-row[data-run-id="{runs["markup"]}"]')
    assert row.locator("td.agent").inner_text() == MARKUP_AGENT
    assert MARKUP_AGENT in page.locator("#filter-agent option").all_inner_texts()
    _open_run(page, runs["markup"])
    assert page.inner_text("#run-summary h2 .agent") == MARKUP_AGENT
    _detail(page, "execute_tool file_read")
    assert json.loads(page.inner_text("#detail .tool-input")) == {"path": MARKUP_INPUT}
    _detail(page, f"invoke_agent {MARKUP_AGENT}")
    # Nothing of it became an element, and none of its scripts ran.
    assert page.locator("img").count() == 0
    assert page.eval_on_selector_all("script", "s => s.map(e => e.getAttribute('src'))") == [
        "/static/app.js"
    ]
    assert page.evaluate("window.__pwned") is None


def test_the_page_is_refused_without_its_token(browser: Browser, viewer: Viewer) -> None:
    context = browser.new_context()
    try:
        page = context.new_page()
        for url, status in (
            (viewer.base, 401),
            (f"{viewer.base}?token=not-the-token", 403),
            (f"{viewer.base}api/runs", 401),
        ):
            response = page.goto(url)
            assert response is not None and response.status == status, url
            assert page.locator("#runs").count() == 0
            assert "coder" not in page.content()
        assert context.cookies() == []
        response = page.goto(viewer.url)
        assert response is not None and response.status == 200
        assert page.url == viewer.base  # the token left the address
        page.wait_for_selector(".run-row")
        (cookie,) = context.cookies()
        assert cookie["httpOnly"] and cookie["sameSite"] == "Strict"
        assert cookie["value"] != viewer.token
        assert page.evaluate("document.cookie") == ""  # out of the page's reach
    finally:
        context.close()


def test_a_captured_run_shows_its_prompt_tool_call_result_and_reply(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    _open_run(page, runs["captured"])
    items = page.locator("#conversation .conversation > .msg")
    roles = items.locator(".msg-role").all_inner_texts()
    assert [role.lower() for role in roles] == ["prompt", "tool call: file_read", "reply"]
    assert CAPTURED_PROMPT in items.nth(0).inner_text()
    tool = items.nth(1)
    assert json.loads(tool.locator("pre.tool-arguments").inner_text()) == {"path": "build.txt"}
    assert tool.locator("pre.tool-result").inner_text() == CAPTURED_FILE.replace(KEY, "[redacted]")
    assert CAPTURED_REPLY in items.nth(2).inner_text()
    assert KEY not in page.content()
    # The tool call opens its step, its result shown as text, not as an attribute.
    tool.click()
    page.wait_for_function(
        "() => document.querySelector('#detail .detail-name')?.textContent"
        " === 'execute_tool file_read'"
    )
    assert "port 8080" in _section(page, "Tool result")
    assert "gen_ai.tool.call.result" not in _section(page, "Attributes")
    # The run's top step shows the messages it was given and its reply, readably.
    _detail(page, "invoke_agent scribe")
    assert CAPTURED_PROMPT in _section(page, "Messages in")
    assert CAPTURED_REPLY in _section(page, "Reply")
    # The session's second turn: its own prompt and reply, the first turn folded away.
    _open_run(page, runs["captured_2"])
    roles = page.locator("#conversation .conversation > .msg .msg-role").all_inner_texts()
    assert [role.lower() for role in roles] == ["prompt", "reply"]
    assert CAPTURED_SECOND in page.inner_text("#conversation .conversation > .msg >> nth=0")
    assert CAPTURED_SECOND_REPLY in page.inner_text("#conversation .conversation > .msg >> nth=1")
    earlier = page.locator("#conversation details.earlier")
    assert earlier.get_attribute("open") is None
    assert "Earlier in the session: 4 messages" in earlier.locator("summary").inner_text()
    earlier.locator("summary").click()
    assert CAPTURED_PROMPT in earlier.inner_text()


def test_a_run_without_captured_text_says_how_to_record_it(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    _open_run(page, runs["tools"])
    hint = page.inner_text("#conversation .hint")
    assert "--telemetry-capture-content true" in hint and "captureContent" in hint
    assert page.locator("#conversation .msg").count() == 0
    _open_run(page, runs["diamond"])  # a team run: its tasks' runs have their own
    assert page.locator("#conversation").is_hidden()


def test_a_failed_team_run_says_why_and_shows_its_skipped_task(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    _open_run(page, runs["team_failed"])
    failure = page.locator("#run-summary .run-error")
    assert failure.locator(".error-kind").inner_text() == "process"
    assert failure.locator(".error-message").inner_text() == (
        "task build failed: sh exited with code 3: BUILD-BROKE-MARKER; "
        "task ship skipped: dependency 'build' did not complete"
    )
    ship = page.locator('#graph .node[data-task-id="ship"]')
    assert "task-skipped" in str(ship.get_attribute("class"))
    assert ship.locator(".task-meta").text_content() == "failer · skipped"
    bar = page.locator(
        "#timeline .span-row", has=page.locator(".label", has_text="task ship")
    ).locator(".bar")
    assert "status-skipped" in str(bar.get_attribute("class"))
    _detail(page, "task ship")
    assert page.inner_text("#detail header .badge") == "skipped"
    assert _section(page, "Why it was skipped") == (
        "Why it was skipped\ndependency 'build' did not complete"
    )
    _detail(page, "task build")
    assert "sh exited with code 3: BUILD-BROKE-MARKER" in _section(page, "Why it failed")


def test_the_timeline_has_a_legend_of_its_colours_and_marks(
    page: Page, recorded: tuple[Path, dict[str, str]]
) -> None:
    _state, runs = recorded
    _open_run(page, runs["delegation"])
    legend = page.locator("#legend li")
    assert legend.all_inner_texts() == [
        "agent run",
        "model request",
        "tool call",
        "delegation",
        "compaction",
        "team run",
        "task",
        "failed (red outline)",
        "cancelled (striped)",
        "skipped (hollow)",
    ]
    # Each kind's swatch has the colour of its bars.
    for operation, label in (("invoke_agent", "invoke_agent lead"), ("chat", "chat sim-1")):
        swatch = page.locator(f"#legend .swatch.op-{operation}")
        bar = page.locator(
            "#timeline .span-row", has=page.locator(".label", has_text=label)
        ).first.locator(".bar")
        colour = "el => getComputedStyle(el).backgroundColor"
        assert swatch.evaluate(colour) == bar.evaluate(colour)


@pytest.mark.parametrize("width", [800, 1400])
def test_the_layout_fits_the_window_with_a_captured_run_shown(
    browser: Browser, viewer: Viewer, recorded: tuple[Path, dict[str, str]], width: int
) -> None:
    """At 800 and 1400 px: nothing wider than the window, the timeline's
    labels, bars and durations side by side, the step's detail beside the
    timeline when there is room and under it when there is not. Leaves a
    screenshot of each (in ``OMA_VIEWER_SHOTS`` too, when set)."""
    _state, runs = recorded
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(UI_TIMEOUT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(viewer.url)
        page.wait_for_selector(".run-row")
        _open_run(page, runs["captured"])
        _detail(page, "execute_tool file_read")
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        for selector in ("#runs-pane", "#run-summary", "#conversation", "#timeline", "#detail"):
            box = page.locator(selector).bounding_box()
            assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width, selector
        rows = page.locator("#timeline .span-row").all()
        for row in rows:
            label, track, duration = (
                row.locator(part).bounding_box() for part in (".label", ".track", ".dur")
            )
            assert label and track and duration
            assert label["x"] + label["width"] <= track["x"] + 1
            assert track["x"] + track["width"] <= duration["x"] + duration["width"]
            assert track["width"] > width / 4  # the bars have room
        timeline = page.locator("#timeline").bounding_box()
        detail = page.locator("#detail").bounding_box()
        assert timeline and detail
        if width < 1100:
            assert detail["y"] >= timeline["y"] + timeline["height"]  # under it
            assert page.locator("#runs th.run-id").is_hidden()
        else:
            assert detail["x"] >= timeline["x"] + timeline["width"]  # beside it
            assert page.locator("#runs th.run-id").is_visible()
        prompt = page.locator(f'.run-row[data-run-id="{runs["captured"]}"] td.prompt')
        assert prompt.is_visible() and (prompt.bounding_box() or {"width": 0})["width"] > 100
        shot = page.screenshot(full_page=True)
        assert shot.startswith(b"\x89PNG\r\n\x1a\n") and len(shot) > 20_000
        shots = os.environ.get("OMA_VIEWER_SHOTS")
        if shots:
            Path(shots).mkdir(parents=True, exist_ok=True)
            (Path(shots) / f"run-viewer-{width}.png").write_bytes(shot)
        assert errors == [], errors
    finally:
        context.close()


def test_a_screenshot_of_a_run_s_timeline(
    page: Page, recorded: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    _state, runs = recorded
    _open_run(page, runs["captured"])
    _detail(page, "execute_tool file_read")
    shot = tmp_path / "run-viewer.png"
    page.screenshot(path=str(shot), full_page=True)
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 20_000
    if os.environ.get("OMA_DOCS_IMAGES") == "1":
        DOCS_IMAGE.parent.mkdir(exist_ok=True)
        DOCS_IMAGE.write_bytes(data)
