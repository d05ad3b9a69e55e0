"""``assay serve`` (issue 30): the read-only leaderboard app on real data (WMT16 DA, two language pairs,
sentBLEU and chrF), its JSON twins against the CLI's ``--json``, the headline and side evaluations,
sign-in, and the requests it must refuse. The browser test (Debian's chromium) drives a real
``assay serve`` process."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest
from click.testing import CliRunner
from starlette.testclient import TestClient

from assay.catalog.engine import reset_engines
from assay.cli.main import cli
from assay.config import load_settings
from assay.errors import InputError, UsageError
from assay.jobs.evaluation import evaluate
from assay.jobs.ingest import ingest_path
from assay.jobs.scoring import score_dataset
from assay.metrics.registry import MetricSpec
from assay.serve.access import AUTH_VARIABLE, Access
from assay.serve.app import MAX_QUERY_BYTES, create_app
from tests.conftest import assay_home_at
from tests.report_support import open_page, require_browser, start_serve

SIDE = "human translations excluded"
"""WMT16 DA's rule keeps human translations as candidates: excluding them is a side evaluation."""
PASSWORD = "s3cret-Pa55word-xyz"
TOKEN = "tok-0123456789abcdef-team"


@pytest.fixture(scope="module")
def served_home(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """WMT16 DA (cs-en, de-en) scored with sentBLEU and chrF, evaluated at segment level (Kendall,
    Pearson), then a side evaluation (human translations excluded) evaluated last."""
    with assay_home_at(tmp_path_factory.mktemp("served")) as home:
        ingest_path(shared_data / "wmt16-da-seg", options={"groups": "cs-en,de-en"})
        for metric in ("sentbleu", "chrf"):
            score_dataset("wmt16", MetricSpec(metric), progress=False)
        headline = evaluate("wmt16", level="seg", statistics=["kendall", "pearson"], n_resamples=100)
        side = evaluate("wmt16", level="seg", statistics=["kendall", "pearson"], include_human=False,
                        n_resamples=100)
    yield {"home": home, "headline": headline, "side": side}


@pytest.fixture
def in_home(served_home: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setenv("ASSAY_HOME", str(served_home["home"]))
    reset_engines()
    return served_home


def _client(access: Access | None = None) -> TestClient:
    return TestClient(create_app(load_settings(), access or Access()), raise_server_exceptions=False)


def _cli_json(*args: str) -> Any:
    result = CliRunner().invoke(cli, [*args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_json_twins_are_the_clis_numbers(in_home: dict[str, Any]) -> None:
    client = _client()
    for query, args in [
        ("dataset=wmt16", ["--dataset", "wmt16"]),
        ("dataset=wmt16&stat=pearson&group=cs-en", ["--dataset", "wmt16", "--stat", "pearson", "--group", "cs-en"]),
        (f"dataset=wmt16@1&side={quote(SIDE)}", ["--dataset", "wmt16@1", "--side", SIDE]),
    ]:
        expected = _cli_json("leaderboard", *args)
        for response in (client.get(f"/leaderboard.json?{query}"),
                         client.get(f"/leaderboard?{query}", headers={"Accept": "application/json"})):
            assert response.status_code == 200, response.text
            assert response.headers["content-type"].startswith("application/json")
            assert response.json() == expected, query
    overview = client.get("/index.json").json()
    assert [(c["dataset"], c["level"], c["statistic"], c["group"]) for c in overview] == [("wmt16", "seg", "kendall",
                                                                                          "all")]
    assert overview[0]["leaders"] == _cli_json("leaderboard", "--dataset", "wmt16")


def test_the_dataset_and_compare_pages_are_the_clis_json(in_home: dict[str, Any]) -> None:
    client = _client()
    for path, args in [("/dataset.json?ref=wmt16", ["datasets", "show", "wmt16"]),
                       ("/dataset.json?ref=wmt16@1", ["datasets", "show", "wmt16@1"]),
                       ("/compare.json?dataset=wmt16&first=chrf&second=sentbleu",
                        ["compare", "chrf", "sentbleu", "--dataset", "wmt16"]),
                       (f"/compare.json?dataset=wmt16&first=sentbleu&second=chrf&stat=pearson&side={quote(SIDE)}",
                        ["compare", "sentbleu", "chrf", "--dataset", "wmt16", "--stat", "pearson", "--side", SIDE])]:
        response = client.get(path)
        assert response.status_code == 200, (path, response.text)
        assert response.json() == _cli_json(*args), path
    detail = client.get("/dataset.json?ref=wmt16").json()
    assert {s["group"] for s in detail["systems"]} == {"cs-en", "de-en"}
    assert all(len(f["sha256"]) == 64 for f in detail["source_files"])
    html = client.get("/dataset?ref=wmt16").text
    assert detail["source_files"][0]["sha256"] in html and "Rater agreement" in html

    # chrF beats sentBLEU in every group of the headline run: the stored paired test, same run for both
    compared = client.get("/compare.json?dataset=wmt16&first=chrf&second=sentbleu").json()
    assert [g["group"] for g in compared["groups"]] == ["all", "cs-en", "de-en"]
    leaders = {r["metric"]: r for r in client.get("/leaderboard.json?dataset=wmt16").json()}
    first = compared["groups"][0]
    assert first["first"]["value"] == leaders["chrf"]["value"]
    assert first["difference"] == pytest.approx(leaders["chrf"]["value"] - leaders["sentbleu"]["value"])
    assert first["better"] == "first" and first["test"] and first["p_value"] is not None
    assert first["significant"] == (first["p_value"] < 0.05)
    assert all(g["first"]["run_id"] == in_home["headline"]["run_id"] for g in compared["groups"])
    page = client.get("/compare?dataset=wmt16&first=chrf&second=sentbleu").text
    assert "chrf against sentbleu" in page and first["test"] in page


def test_the_headline_is_shown_and_a_side_evaluation_only_under_its_label(in_home: dict[str, Any]) -> None:
    client = _client()
    headline, side = in_home["headline"], in_home["side"]
    assert side["side"] == SIDE and headline["side"] is None
    rows = client.get("/leaderboard.json?dataset=wmt16").json()
    assert {r["run_id"] for r in rows} == {headline["run_id"]} and all(r["side"] is None for r in rows)
    sided = client.get(f"/leaderboard.json?dataset=wmt16&side={quote(SIDE)}").json()
    assert {r["run_id"] for r in sided} == {side["run_id"]}
    html = client.get("/leaderboard?dataset=wmt16").text
    assert f"<option>{SIDE}</option>" in html and "side evaluation:" not in html
    assert "side evaluation: " + SIDE in client.get(f"/leaderboard?dataset=wmt16&side={quote(SIDE)}").text
    # every number carries its signature and protocol signature on hover; the permalink pins the version
    first = rows[0]
    assert f'title="signature: {first["signature"]}' in html
    assert 'href="/leaderboard?dataset=wmt16%401&amp;level=seg&amp;stat=kendall&amp;group=all"' in html
    assert "1,120 segments" in html  # n with its unit


@pytest.mark.parametrize(("path", "status", "says"), [
    ("/leaderboard?dataset=wmt16'%20OR%201=1--", 400, "invalid dataset name"),
    ("/leaderboard?dataset=%3Cscript%3Ealert(1)%3C/script%3E", 400, "&lt;script&gt;"),
    ("/leaderboard?dataset=wmt16&group=%27;DROP%20TABLE%20x;--", 404, "no seg-level kendall correlations"),
    ("/leaderboard?dataset=wmt16&stat=%3Cimg%20src=x%20onerror=alert(1)%3E", 404, "&lt;img src=x"),
    ("/leaderboard?dataset=wmt16&aspect=..%2F..%2Fetc%2Fpasswd", 404, "aspect"),
    ("/leaderboard?dataset=wmt16&side=%27%20OR%20%271%27=%271", 404, "side evaluation"),
    ("/leaderboard?dataset=wmt16&level=zzz", 400, "is not one of seg, sys, avg"),
    ("/leaderboard?dataset=wmt16@99", 404, ""),
    ("/leaderboard?dataset=nosuch", 404, "no evaluations of nosuch"),
    ("/leaderboard?dataset=/etc/passwd", 400, "invalid dataset name"),
    ("/leaderboard", 400, "parameter &#39;dataset&#39; is required"),
    ("/leaderboard?dataset=" + "a" * 201, 400, "longer than 200 characters"),
    ("/leaderboard?x=" + "a" * (MAX_QUERY_BYTES + 1), 414, "longer than 2048 bytes"),
    ("/../../etc/passwd", 404, ""),
    ("/static/..%2F..%2Fpyproject.toml", 404, ""),
    ("/static/app.py", 404, ""),
    ("/sql?q=select%201", 404, ""),
    ("/dataset?ref=..%2F..%2Fetc%2Fpasswd", 400, "invalid dataset name"),
    ("/dataset?ref=wmt16%27%3B--", 400, "invalid dataset name"),
    ("/dataset?ref=nosuch", 404, "nosuch"),
    ("/dataset", 400, "parameter &#39;ref&#39; is required"),
    ("/checkpoint?ref=%3Cscript%3E", 404, "&lt;script&gt;"),
    ("/checkpoint?ref=nosuch", 404, "nosuch"),
    ("/compare?dataset=wmt16&first=chrf&second=chrf", 400, "two different"),
    ("/compare?dataset=wmt16&first=chrf&second=%3Cb%3Enope", 404, "&lt;b&gt;nope"),
    ("/compare?dataset=wmt16&first=chrf", 400, "parameter &#39;second&#39; is required"),
    ("/compare?dataset=wmt16&first=chrf&second=sentbleu&level=x%27", 400, "is not one of"),
    ("/errors?dataset=wmt16", 404, "no error analysis of wmt16"),
    ("/errors?dataset=wmt16&by=%27%20OR%201=1", 400, "is not one of category"),
    ("/errors?dataset=..%2F..%2Fetc%2Fpasswd", 400, "invalid dataset name"),
    ("/checkpoint?ref=%27%20OR%201=1--", 404, "no checkpoint"),
    ("/compare?dataset=wmt16&first=%27%20OR%201=1--&second=chrf", 404, "no group of wmt16 has both"),
    ("/compare?dataset=wmt16&first=chrf&second=sentbleu&side=%3Cscript%3E", 404, "&lt;script&gt;"),
    ("/dataset.json?ref=wmt16@99", 404, ""),
])
def test_bad_requests_get_a_4xx_page_without_a_traceback(in_home: dict[str, Any], path: str, status: int,
                                                          says: str) -> None:
    response = _client().get(path)
    assert response.status_code == status, (path, response.text[:300])
    assert "Traceback" not in response.text and 'File "' not in response.text
    assert "<script>" not in response.text and "<img" not in response.text
    assert says in response.text
    as_json = _client().get(path, headers={"Accept": "application/json"})
    assert as_json.status_code == status and as_json.json()["status"] == status


def test_nothing_writes(in_home: dict[str, Any]) -> None:
    client = _client()
    for method in ("POST", "PUT", "DELETE", "PATCH"):
        assert client.request(method, "/leaderboard?dataset=wmt16").status_code == 405
    before = sorted(str(p.relative_to(in_home["home"])) for p in Path(in_home["home"]).rglob("*.parquet"))
    client.get("/"), client.get("/leaderboard?dataset=wmt16")
    assert sorted(str(p.relative_to(in_home["home"])) for p in Path(in_home["home"]).rglob("*.parquet")) == before
    headers = client.get("/").headers
    assert "script-src 'self'" in headers["content-security-policy"] and headers["x-content-type-options"] == "nosniff"


@pytest.mark.postgres
def test_the_catalog_is_opened_read_only(in_home: dict[str, Any], postgres_url: str) -> None:
    """The app's catalog refuses writes in the database itself: SQLite opened with mode=ro and
    query_only, PostgreSQL with read-only transactions; a read still works in both."""
    from dataclasses import replace

    from sqlalchemy import text
    from sqlalchemy.exc import DBAPIError

    from assay.catalog.engine import get_engine, make_engine, upgrade

    settings = replace(load_settings(), catalog_read_only=True)
    assert get_engine(settings) is not get_engine(load_settings())
    with get_engine(settings).connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM dataset_versions")).scalar_one() == 1
        with pytest.raises(DBAPIError, match=r"readonly|read-only|attempt to write"):
            conn.execute(text("UPDATE datasets SET name = 'x'"))
    upgrade(postgres_url)
    engine = make_engine(postgres_url, read_only=True)
    try:
        with engine.connect() as conn:
            assert conn.execute(text("SELECT count(*) FROM datasets")).scalar_one() == 0
            with pytest.raises(DBAPIError, match="read-only transaction"):
                conn.execute(text("INSERT INTO datasets (name) VALUES ('x')"))
    finally:
        engine.dispose()
    reset_engines()


def test_a_new_evaluation_is_served_without_a_restart(shared_data: Path, tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """The app reads the catalog and the stores on every request: a run evaluated while it serves
    (last night's) is the headline at once, and a newly ingested dataset has its page."""
    with assay_home_at(tmp_path / "home") as home:
        monkeypatch.setenv("ASSAY_HOME", str(home))
        ingest_path(shared_data / "wmt16-da-seg", options={"groups": "cs-en"})
        score_dataset("wmt16", MetricSpec("sentbleu"), progress=False)
        first = evaluate("wmt16", level="seg", statistics=["kendall"], n_resamples=50)
        client = _client()
        shown = client.get("/leaderboard.json?dataset=wmt16&group=cs-en")
        assert shown.status_code == 200, shown.text
        assert {r["run_id"] for r in shown.json()} == {first["run_id"]}
        assert client.get("/dataset?ref=mqm-ted-ende").status_code == 404
        second = evaluate("wmt16", level="seg", statistics=["kendall"], n_resamples=50, seed=7)
        newest = client.get("/leaderboard.json?dataset=wmt16&group=cs-en").json()
        assert {r["run_id"] for r in newest} == {second["run_id"]}
        ingest_path(shared_data / "mqm-ted-ende")
        assert client.get("/dataset?ref=mqm-ted-ende").status_code == 200


def test_a_metric_across_dataset_versions(shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``/versions`` and ``assay leaderboard --across-versions``: WMT16 DA ingested twice (cs-en, then
    cs-en and de-en: two versions of one dataset), scored and evaluated on each; chrF's value on each
    version is that version's pinned leaderboard's, with its rank, and both are drawn."""
    with assay_home_at(tmp_path / "home") as home:
        monkeypatch.setenv("ASSAY_HOME", str(home))
        for number, groups in ((1, "cs-en"), (2, "cs-en,de-en")):
            assert ingest_path(shared_data / "wmt16-da-seg", options={"groups": groups}).version.number == number
            for metric in ("sentbleu", "chrf"):
                score_dataset(f"wmt16@{number}", MetricSpec(metric), progress=False)
            evaluate(f"wmt16@{number}", level="seg", statistics=["kendall"], n_resamples=50)
        client = _client()
        served = client.get("/versions.json?dataset=wmt16&metric=chrf&group=cs-en")
        assert served.status_code == 200, served.text
        result = served.json()
        assert result == _cli_json("leaderboard", "--dataset", "wmt16", "--group", "cs-en", "--metric", "chrf",
                                   "--across-versions")
        assert [v["label"] for v in result["versions"]] == ["wmt16@1", "wmt16@2"]
        for v in result["versions"]:
            pinned = {r["metric"]: r for r in client.get(
                f"/leaderboard.json?dataset={v['label']}&group=cs-en").json()}
            assert v["row"]["value"] == pinned["chrf"]["value"] and v["row"]["rank"] == pinned["chrf"]["rank"]
            assert v["ranked_among"] == 2
        # the mean over groups exists on version 2 only: version 1 says why it has no value
        mean = client.get("/versions.json?dataset=wmt16&metric=chrf").json()["versions"]
        assert mean[0]["row"] is None and "no seg-level kendall correlations" in mean[0]["note"]
        html = client.get("/versions?dataset=wmt16&metric=chrf&group=cs-en").text
        assert html.count('class="chart chart-versions"') == 1 and "1 of 2" in html
        board = client.get("/leaderboard?dataset=wmt16&group=cs-en").text
        assert "/versions?dataset=wmt16&amp;metric=chrf" in board
        assert client.get("/versions?dataset=wmt16&metric=nosuch").status_code == 404


def test_basic_auth_and_bearer_tokens(in_home: dict[str, Any], tmp_path: Path) -> None:
    basic = Access.configured(environ={AUTH_VARIABLE: f"team:{PASSWORD}"})
    client = _client(basic)
    missing = client.get("/leaderboard?dataset=wmt16")
    assert missing.status_code == 401 and missing.headers["www-authenticate"].startswith("Basic")
    assert client.get("/", auth=("team", "wrong")).status_code == 401
    assert client.get("/", auth=("other", PASSWORD)).status_code == 401
    assert client.get("/", headers={"Authorization": "Basic !!!notbase64"}).status_code == 401
    assert client.get("/", headers={"Authorization": f"Bearer {PASSWORD}"}).status_code == 401
    health = client.get("/health")  # for probes: no sign-in, and nothing but "ok"
    assert health.status_code == 200 and health.text == "ok\n"
    allowed = client.get("/leaderboard?dataset=wmt16", auth=("team", PASSWORD))
    assert allowed.status_code == 200
    for response in (missing, allowed, client.get("/index.json", auth=("team", PASSWORD))):
        assert PASSWORD not in response.text
    assert PASSWORD not in repr(basic) and PASSWORD not in basic.describe()

    tokens = tmp_path / "tokens"
    tokens.write_text(f"# the team's readers\n\n{TOKEN}\n", encoding="utf-8")
    bearer = Access.configured(tokens, environ={})
    client = _client(bearer)
    assert client.get("/").status_code == 401
    assert client.get("/", headers={"Authorization": "Bearer tok-wrong-0123456789abcdef"}).status_code == 401
    assert client.get("/", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200
    assert TOKEN not in bearer.describe() and "1 token(s)" in bearer.describe()

    tokens.write_text("# readers\nshort\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"tokens:2: not a token \(expected one token of at least 16"):
        Access.configured(tokens, environ={})
    with pytest.raises(UsageError, match="user:password"):
        Access.configured(environ={AUTH_VARIABLE: "nocolon"})
    with pytest.raises(UsageError, match="choose one sign-in"):
        Access.configured(tokens, environ={AUTH_VARIABLE: "a:b"})
    with pytest.raises(UsageError, match="would let anyone on the network"):
        Access().check_host("0.0.0.0")
    Access().check_host("127.0.0.1")
    basic.check_host("0.0.0.0")


def test_serve_in_a_browser(in_home: dict[str, Any], tmp_path: Path) -> None:
    """A real ``assay serve`` process with bearer tokens, driven in Debian's chromium: the overview,
    the leaderboard through its link, sorting, the signature on hover, the side evaluation through
    its filter, and the permalink; no console errors and no failed requests. The screenshots go to
    ``ASSAY_SCREENSHOTS`` when it is set (to be looked at), else to the test's folder."""
    executable = require_browser()
    tokens = tmp_path / "tokens"
    tokens.write_text(TOKEN + "\n", encoding="utf-8")
    env = {**os.environ, "ASSAY_HOME": str(in_home["home"])}
    env.pop(AUTH_VARIABLE, None)
    started = time.monotonic()
    process, line = start_serve(env, "--tokens-file", str(tokens))
    shots = Path(os.environ.get("ASSAY_SCREENSHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    try:
        url = re.search(r"(http://\S+/)", line).group(1)  # type: ignore[union-attr]
        print(f"assay serve answered its start-up line after {time.monotonic() - started:.2f} s")
        assert "bearer tokens from" in line and TOKEN not in line
        with open_page(url, executable, extra_headers={"Authorization": f"Bearer {TOKEN}"}) as (page, log):
            assert "wmt16" in page.inner_text("table.overview")
            page.screenshot(path=str(shots / "serve-overview.png"), full_page=True)
            page.click("table.overview a")
            page.wait_for_selector("table.leaderboard")
            metrics = page.locator("table.leaderboard tbody td.metric").all_inner_texts()
            assert metrics == ["chrf", "sentbleu"]  # ranked by Kendall's tau, best first
            page.click("table.leaderboard th:nth-child(5)")  # value, ascending
            assert page.locator("table.leaderboard tbody td.metric").all_inner_texts() == ["sentbleu", "chrf"]
            page.click("table.leaderboard th:nth-child(5)")  # and back
            assert page.locator("table.leaderboard tbody td.metric").all_inner_texts() == ["chrf", "sentbleu"]
            title = page.get_attribute("table.leaderboard tbody td.metric", "title") or ""
            assert title.startswith("signature: chrf|") and "protocol: wmt16|level:seg" in title
            page.screenshot(path=str(shots / "serve-leaderboard.png"), full_page=True)
            page.select_option("select[name=side]", SIDE)
            page.click("form.filters button")
            page.wait_for_selector("h1 .side")
            assert SIDE in page.inner_text("h1")
            permalink = page.get_attribute("#permalink", "href") or ""
            assert "dataset=wmt16%401" in permalink and "side=human+translations+excluded" in permalink
            page.screenshot(path=str(shots / "serve-side.png"), full_page=True)
            page.goto(url + permalink.lstrip("/"))
            assert SIDE in page.inner_text("h1")
            # the compare form under the leaderboard: chrF against sentBLEU in every group
            page.click("form.compare button")
            page.wait_for_selector("table.compare")
            assert page.locator("table.compare tbody tr").count() == 3
            assert SIDE in page.inner_text("h1")
            page.screenshot(path=str(shots / "serve-compare.png"), full_page=True)
            page.click("h1 a")  # the dataset version's page
            page.wait_for_selector("table.systems")
            assert "wmt16@1" in page.inner_text("h1")
            page.screenshot(path=str(shots / "serve-dataset.png"), full_page=True)
            page.go_back()
            page.go_back()
            page.click("table.leaderboard tbody td.metric a >> nth=0")  # chrF across the dataset's versions
            page.wait_for_selector("table.versions")
            assert "on every version of wmt16" in page.inner_text("h1")
            assert page.locator("table.versions tbody tr").count() == 1
            page.screenshot(path=str(shots / "serve-versions.png"), full_page=True)
            assert log.console_errors == [] and log.errors == [] and log.failed_requests == []
    finally:
        process.terminate()
        process.communicate(timeout=20)  # and its stderr pipe closed


def test_the_report_exports_the_served_pages(in_home: dict[str, Any], tmp_path: Path) -> None:
    """``assay report`` writes the served pages as self-contained files (issue 30: the report is an
    export of the same pages): the overview, the leaderboard and dataset pages with the app's
    numbers, each with its JSON twin; nothing loaded from elsewhere, opened in chromium."""
    result = CliRunner().invoke(cli, ["report", "--out", str(tmp_path / "report")])
    assert result.exit_code == 0, result.output
    pages = tmp_path / "report" / "pages"
    index = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert 'href="pages/index.html"' in index
    client = _client()
    assert json.loads((pages / "index.json").read_text(encoding="utf-8")) == client.get("/index.json").json()
    overview = (pages / "index.html").read_text(encoding="utf-8")
    board = re.search(r'href="(leaderboard-wmt16[^"]*\.html)"', overview)
    assert board is not None, overview
    exported = json.loads((pages / board.group(1).replace(".html", ".json")).read_text(encoding="utf-8"))
    assert exported == client.get("/leaderboard.json?dataset=wmt16&level=seg&stat=kendall&group=all").json()
    for page in pages.glob("*.html"):
        html = page.read_text(encoding="utf-8")
        assert "/static/" not in html and 'src="http' not in html and 'href="/' not in html, page.name
        assert '<form' not in html  # the filters need the app
    assert any(p.name.startswith("dataset-wmt16@1") for p in pages.glob("*.html"))
    executable = require_browser()
    with open_page((pages / board.group(1)).as_uri(), executable) as (page, log):
        assert page.locator("table.leaderboard tbody td.metric").all_inner_texts() == ["chrf", "sentbleu"]
        page.click("table.leaderboard th:nth-child(5)")  # sorting works from the inlined script
        assert page.locator("table.leaderboard tbody td.metric").all_inner_texts() == ["sentbleu", "chrf"]
        page.click("h1 a")  # the dataset version's page, a file beside it
        page.wait_for_selector("table.systems")
        assert log.console_errors == [] and log.errors == [] and log.failed_requests == []


def test_concurrent_requests_to_a_real_server(in_home: dict[str, Any]) -> None:
    """20 clients at once on a real ``assay serve`` (its handlers run in a thread pool, the catalog
    read-only): every answer is right, before and after the answers are reused. Once, SQLite's
    read-only engine shared one connection between threads and the server died of a segfault."""
    import urllib.request
    from concurrent.futures import ThreadPoolExecutor

    env = {**os.environ, "ASSAY_HOME": str(in_home["home"])}
    env.pop(AUTH_VARIABLE, None)
    process, line = start_serve(env)
    url = line[line.index("http://"):].split()[0]
    paths = ["leaderboard.json?dataset=wmt16", "leaderboard.json?dataset=wmt16&stat=pearson", "index.json",
             "dataset.json?ref=wmt16", "compare.json?dataset=wmt16&first=chrf&second=sentbleu"]

    def fetch(k: int) -> tuple[str, int, Any]:
        path = paths[k % len(paths)]
        with urllib.request.urlopen(url + path, timeout=60) as response:
            return path, response.status, json.loads(response.read())

    try:
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(fetch, range(100)))
        assert process.poll() is None, process.communicate()[1][-2000:]
    finally:
        process.terminate()
        process.communicate(timeout=20)
    client = _client()
    for path, status, body in answers:
        assert status == 200 and body == client.get("/" + path).json(), path


def test_serve_refuses_a_public_address_without_sign_in(in_home: dict[str, Any]) -> None:
    result = CliRunner().invoke(cli, ["serve", "--host", "0.0.0.0"], env={AUTH_VARIABLE: ""})
    assert result.exit_code == 2 and "would let anyone on the network" in result.output
