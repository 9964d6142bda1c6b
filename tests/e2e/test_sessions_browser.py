"""Sessions are isolated: two browsers uploading different CSVs never see each other's data.

Also checks the promise made next to the uploader: an upload stays in the session's memory —
no file written during the test holds its column names or cells, and the server logs none.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.e2e.conftest import (
    ROOT,
    assert_no_exception,
    choose_dataset,
    running_server,
    wait_for_app,
)

pytestmark = pytest.mark.e2e

PAGES = {"Data": "data", "Noisy statistics": "statistics", "Selection": "selection"}
CHART = "[data-testid='stPlotlyChart'] .main-svg"
UPLOAD = "Upload your own CSV"
DEFAULT_NAME = "Adult (UCI census income)"   # the built-in dataset a fresh session starts with


@dataclass(frozen=True)
class SecretFile:
    """A small CSV whose column names and categories exist nowhere else (a per-run token)."""

    name: str
    column: str
    categories: tuple[str, ...]
    amount: str

    @classmethod
    def make(cls, who: str, token: str) -> SecretFile:
        return cls(f"{who}.csv", f"{who}_secret_col_{token}",
                   tuple(f"{who}_{fruit}_{token}" for fruit in ("plum", "fig", "kiwi")),
                   f"{who}_amount_{token}")

    def write(self, folder: Path, rows: int = 24) -> Path:
        # Uneven counts (plum most common) so the selection page has one best candidate.
        cells = [self.categories[0]] * (rows // 2) + [self.categories[1]] * (rows // 3)
        cells += [self.categories[2]] * (rows - len(cells))
        body = "".join(f"{c},{10 + 7 * i}\n" for i, c in enumerate(cells))
        path = folder / self.name
        path.write_text(f"{self.column},{self.amount}\n{body}", encoding="utf-8")
        return path

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.column, self.amount, *self.categories)


# -- files on disk: what changed while the app ran ---------------------------------------------

def scanned_roots() -> list[Path]:
    """Where the server could write: the working tree, the temp folders, Streamlit's home dir."""
    roots = [ROOT, Path(tempfile.gettempdir()), Path("/var/tmp"), Path("/dev/shm"),
             Path.home() / ".streamlit"]
    return [r for r in dict.fromkeys(roots) if r.is_dir()]


def file_states(roots: list[Path], skip: tuple[Path, ...]) -> dict[str, tuple[int, int]]:
    """path → (mtime_ns, size) of every regular file under ``roots`` (symlinks not followed)."""
    skipped = {str(p) for p in skip}
    states: dict[str, tuple[int, int]] = {}
    for root in roots:
        for folder, dirs, files in os.walk(root, onerror=lambda _: None):
            # The shell tool running pytest keeps its console capture in /tmp/bash_*: pytest's
            # own output, not the server's.
            dirs[:] = [d for d in dirs if os.path.join(folder, d) not in skipped
                       and not (folder == "/tmp" and d.startswith("bash_"))]
            for name in files:
                path = os.path.join(folder, name)
                try:
                    st = os.lstat(path)
                except OSError:
                    continue   # removed meanwhile (other processes share /tmp)
                if os.path.isfile(path) and not os.path.islink(path):
                    states[path] = (st.st_mtime_ns, st.st_size)
    return states


def files_holding(paths: list[str], needles: tuple[str, ...]) -> dict[str, list[str]]:
    """Which of ``paths`` contain which needles (UTF-8 or UTF-16 bytes); unreadable ones skipped."""
    patterns = {n: (n.encode(), n.encode("utf-16-le")) for n in needles}
    found: dict[str, list[str]] = {}
    for path in paths:
        try:
            if os.path.getsize(path) > 256 * 2**20:
                continue   # no 256 MB file comes from a 24-row upload
            data = Path(path).read_bytes()
        except OSError:
            continue
        hits = [n for n, encoded in patterns.items() if any(e in data for e in encoded)]
        if hits:
            found[path] = hits
    return found


def changed_files(before: dict[str, tuple[int, int]],
                  after: dict[str, tuple[int, int]]) -> list[str]:
    return [p for p, state in after.items() if before.get(p) != state]


# -- the browser side --------------------------------------------------------------------------

def page_text(page) -> str:
    """Everything a user could read, chart labels (SVG text) included."""
    return page.evaluate("() => document.body.textContent")


def assert_never_shows(page, secrets: tuple[str, ...], where: str) -> None:
    html = page.content()
    for secret in secrets:
        assert secret not in html, f"{where}: {secret!r} is on the page"
        assert secret not in page.url, f"{where}: {secret!r} is in the URL {page.url}"


def upload(page, url: str, path: Path, rows: int) -> None:
    page.goto(url)
    wait_for_app(page)
    choose_dataset(page, UPLOAD)
    page.locator(".st-key-upload_file input[type='file']").set_input_files(str(path))
    page.wait_for_selector(f"[data-testid='stSidebar'] :text('{path.name}: {rows} rows')",
                           timeout=30_000)
    wait_for_app(page)
    assert_no_exception(page)


def go_to(page, title: str) -> None:
    """Switch page through the app's own navigation (a reload would start a new session)."""
    page.locator("[data-testid='stSidebarNav'] a", has_text=title).first.click()
    wait_for_app(page)
    page.wait_for_selector(CHART, timeout=30_000)
    assert_no_exception(page)
    assert page.locator("h1").first.inner_text().startswith(title)


def assert_shows_own_data(page, own: SecretFile, other: SecretFile, title: str) -> None:
    text = page_text(page)
    where = f"{own.name} session, {title} page"
    assert f"{own.name}: 24 rows × 2 columns" in text, where
    assert own.column in text, f"{where}: own column missing"
    # Data: a bar chart per category; statistics: a histogram of the categorical column;
    # selection: one candidate per category.
    assert all(c in text for c in own.categories), f"{where}: own categories missing"
    assert_never_shows(page, other.secrets, where)
    assert DEFAULT_NAME not in text, f"{where}: shows the built-in data instead"
    # An upload's column names stay out of the URL (and so out of the browser's history).
    assert own.column not in page.url, f"{where}: column name in the URL {page.url}"


def assert_fresh_session(page, secrets: tuple[str, ...], where: str) -> None:
    """A new session (reload or new browser) has no upload: the built-in default, no secrets."""
    page.wait_for_selector(CHART, timeout=30_000)
    assert_no_exception(page)
    sidebar = page.locator("[data-testid='stSidebar']").inner_text()
    assert f"{DEFAULT_NAME}: 48,842 rows" in sidebar, f"{where}: {sidebar[:300]}"
    assert_never_shows(page, secrets, where)


def test_two_uploads_in_two_sessions_never_meet(browser, tmp_path):
    token = uuid.uuid4().hex[:12]
    alpha, beta = SecretFile.make("alpha", token), SecretFile.make("beta", token)
    every_secret = alpha.secrets + beta.secrets
    paths = {f: f.write(tmp_path) for f in (alpha, beta)}

    roots = scanned_roots()
    before = file_states(roots, skip=(tmp_path,))
    # Self-check of the disk scan: a file written now in a scanned folder must be found.
    canary_dir = Path(tempfile.mkdtemp(prefix="epsilon-lab-canary-"))
    (canary_dir / "canary.bin").write_bytes(f"canary_{token}".encode("utf-16-le"))

    log: list[str] = []
    contexts = []
    try:
        with running_server(output=log) as url:
            sessions = {}
            for secret in (alpha, beta):
                context = browser.new_context(viewport={"width": 1400, "height": 1000})
                contexts.append(context)
                page = context.new_page()
                upload(page, url, paths[secret], rows=24)
                sessions[secret] = page

            # Take turns, so both sessions are open on the server while the other one works.
            for title in PAGES:
                for own, other in ((alpha, beta), (beta, alpha)):
                    page = sessions[own]
                    go_to(page, title)
                    assert_shows_own_data(page, own, other, title)

            # A reload starts a new session: the upload is gone with the old one, the page
            # falls back to the built-in data and shows neither file.
            for own in (alpha, beta):
                page = sessions[own]
                page.reload()
                wait_for_app(page)
                assert_fresh_session(page, every_secret, f"{own.name} after reload")
                assert "Until a file loads" in page.locator("[data-testid='stSidebar']"
                                                            ).inner_text()
                for path in PAGES.values():
                    page.goto(f"{url}/{path}")
                    wait_for_app(page)
                    assert_fresh_session(page, every_secret, f"{own.name}, reloaded /{path}")

            # A third browser that never uploaded sees only the built-in default dataset.
            context = browser.new_context(viewport={"width": 1400, "height": 1000})
            contexts.append(context)
            page = context.new_page()
            page.goto(url)
            wait_for_app(page)
            for title in PAGES:
                go_to(page, title)
                assert_fresh_session(page, every_secret, f"fresh session, {title}")
            for context in contexts:
                context.close()
            contexts.clear()
    finally:
        for context in contexts:
            context.close()

    after = file_states(roots, skip=(tmp_path,))
    changed = changed_files(before, after)
    canary = files_holding(changed, (f"canary_{token}",))
    (canary_dir / "canary.bin").unlink()
    canary_dir.rmdir()
    assert list(canary) == [str(canary_dir / "canary.bin")], "the disk scan missed the canary"
    leaked = files_holding(changed, every_secret)
    assert not leaked, f"uploaded data written to disk: {leaked}"

    output = "".join(log)
    for secret in every_secret:
        assert secret not in output, f"the server logged {secret!r}:\n{output[-2000:]}"
    print(f"\n[sessions] {len(changed)} files changed under {[str(r) for r in roots]} during "
          f"the test, none holds the uploads; server output {len(output)} characters, clean")
