"""Session state for Epsilon Lab: the loaded dataset, the seed, and URL-mirrored widget values.

Values shared between pages live in non-widget keys; widget values are remembered per session
and mirrored in ``st.query_params`` so a copied URL reopens the same view.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import streamlit as st

from dashboard import datasets
from dashboard.data import schema
from dashboard.text import plain

DATASET = "dataset"            # the LoadedDataset every page works on (non-widget key)
UPLOADED = "uploaded_dataset"  # the last upload that loaded, kept while other data is shown
UPLOAD_ID = "upload_file_id"   # file_id of the upload already parsed (parse once per file)
SEED = "seed"                  # the random seed for simulations (non-widget key)
SAVED = "_saved_widgets"       # last value of every remembered widget, per session
SCHEMAS = "schema_by_dataset"  # the declarations made on the Data page, per dataset key
UNITS = "privacy_unit_by_dataset"   # dashboard.person's privacy units, per dataset key
URL_SOON = "_url_this_run"    # the values remember() mirrors in the URL at the run's end
URL_OWNER = "_url_owner"      # the page whose run last mirrored each key in the URL
URL_PAGE = "_url_page"        # the page whose run last wrote the URL
DEFAULT_SEED = 2026
DEFAULT_DATASET = datasets.BUILTIN_DATASETS[0]


@st.cache_resource(show_spinner="Loading the dataset…")
def _builtin(name: str, census_rows: int) -> datasets.LoadedDataset:
    # Built-in data is public and read-only: one shared copy for every session.
    return datasets.load_builtin(name, census_rows=census_rows)


def init() -> None:
    """Initialise the shared keys once per session."""
    ss = st.session_state
    ss.setdefault(SEED, DEFAULT_SEED)
    ss.setdefault(SAVED, {})
    if DATASET not in ss:
        ss[DATASET] = _builtin(DEFAULT_DATASET, 1000)


def builtin(name: str, census_rows: int = 1000) -> datasets.LoadedDataset:
    """A built-in dataset, loaded once per process."""
    return _builtin(name, census_rows)


def dataset() -> datasets.LoadedDataset:
    """The dataset every page works on, with the declarations of the Data page applied (the
    one place every page reads them from)."""
    init()
    key = dataset_key()
    unit = st.session_state.get(UNITS, {}).get(key)
    return schema.applied(st.session_state[DATASET], declared_schema(key),
                          None if unit is None else unit.person_column)


def declared_schema(data_key: str) -> schema.Schema | None:
    """The schema declared on the Data page for ``data_key`` (None: the shipped one)."""
    return st.session_state.get(SCHEMAS, {}).get(data_key)


def declare_schema(data_key: str, declared: schema.Schema | None) -> None:
    """Declare (or, with None, forget) the schema of ``data_key`` for this session."""
    schemas = dict(st.session_state.get(SCHEMAS, {}))
    if declared is None:
        schemas.pop(data_key, None)
    else:
        schemas[data_key] = declared
    st.session_state[SCHEMAS] = schemas


def dataset_key() -> str:
    """A short string that identifies the current dataset, for cache keys.

    Cached functions take the frame as ``_frame`` (not hashed: hashing 48,842 rows on every
    rerun is slow) together with this key.
    """
    init()
    ss = st.session_state
    loaded = ss[DATASET]
    if loaded is ss.get(UPLOADED):
        return f"upload:{ss.get(UPLOAD_ID)}"
    if loaded.key:   # a built-in's name and size, a data-folder file's name and version
        return loaded.key
    return f"builtin:{loaded.name}:{len(loaded.frame)}"


def seed() -> int:
    init()
    return int(st.session_state[SEED])


def rng(offset: int = 0) -> np.random.Generator:
    """A generator built from the session's seed (pages never share one across reruns)."""
    return np.random.default_rng([seed(), offset])


def remembered(key: str, default: Any, *, parse: Callable[[str], Any] | None = None,
               options: Sequence[Any] | None = None) -> None:
    """Set the starting value of widget ``key`` before it is drawn.

    The value comes from the URL when it holds a valid one, else from the last time this
    session showed the widget, else ``default``. Call before creating the widget, and create
    the widget with ``key=key`` and no ``value``.

    The value is written to the session state on every run, even when it is already there:
    that write makes Streamlit send it to the browser with the widget. A browser forgets the
    value of a widget that a run did not draw (a page stopped by an input error, a control
    shown only for some settings) while the server may keep it; without the write the control
    would show its first option while the results use the kept value.
    """
    ss = st.session_state
    ss.setdefault(SAVED, {})
    if key in ss:
        value = ss[key]
        if options is not None and value not in options:
            value = default if default in options else options[0]
        ss[key] = value
        return
    value = ss[SAVED].get(key, default)
    raw = st.query_params.get(key)
    if raw is not None:
        try:
            candidate = parse(raw) if parse is not None else raw
        except (TypeError, ValueError, OverflowError):
            candidate = None
        if candidate is not None and (options is None or candidate in options):
            value = candidate
    if options is not None and value not in options:
        value = default
    ss[key] = value


def remember(*keys: str) -> None:
    """Save widget values for this session and mirror them in the URL (at the end of the run:
    :func:`write_url`)."""
    ss = st.session_state
    soon = ss.setdefault(URL_SOON, {})
    for key in keys:
        if key in ss:
            ss[SAVED][key] = ss[key]
            value = ss[key]
            value = value.item() if hasattr(value, "item") else value  # numpy scalar → Python
            soon[key] = value if isinstance(value, str) else repr(value)


def write_url(page: str) -> None:
    """Mirror in the URL, in one update at the end of the run of ``page``, the values
    remembered this run; drop the keys another page's run put there (issue 21 item 5).

    Each update of ``st.query_params`` is a browser history entry at the path the browser
    shows when it arrives: one per key, some still at the previous page's path while a page
    switch runs, made Back land on the previous page with this page's parameters. One update
    at the end lands after the path changed; :func:`history_per_page` makes it replace the
    page's entry instead of adding one.
    """
    ss = st.session_state
    soon = ss.pop(URL_SOON, {})
    owners = ss.setdefault(URL_OWNER, {})
    owners.update(dict.fromkeys(soon, page))
    current = st.query_params.to_dict()
    wanted = {key: value for key, value in current.items() if owners.get(key, page) == page}
    wanted.update(soon)
    # A page switch empties the browser's URL while the server's copy keeps the old page's
    # values: equal to those, the new page's URL was never written (a reload of it lost the
    # dataset and the open plan, issue 32 item 2).
    moved = ss.get(URL_PAGE) != page
    ss[URL_PAGE] = page
    if wanted != current or moved:
        st.query_params.from_dict(wanted)


#: Streamlit adds a browser history entry for each change of the URL's parameters: on this
#: app's URL those are a page's settings, so they replace the page's entry (Back leaves the
#: page); a new page's path is still added.
_HISTORY_JS = """<script>
(() => {
  const history = window.history;
  if (history.epsilonLabPerPage) return;
  const push = history.pushState.bind(history);
  const replace = history.replaceState.bind(history);
  history.pushState = (data, unused, url) => {
    const samePage = url != null
      && new URL(url, window.location.href).pathname === window.location.pathname;
    return (samePage ? replace : push)(data, unused, url);
  };
  history.epsilonLabPerPage = true;
})();
</script>"""


def history_per_page(container: Any = st) -> None:
    """One browser history entry per page visited, not one per setting changed."""
    container.html(_HISTORY_JS, unsafe_allow_javascript=True)


def remember_in_session(*keys: str) -> None:
    """Save widget values for this session only, and take them out of the URL: for values
    that come from (or name parts of) an uploaded file."""
    ss = st.session_state
    for key in keys:
        if key in ss:
            ss[SAVED][key] = ss[key]
        ss.get(URL_SOON, {}).pop(key, None)
        st.query_params.pop(key, None)


def forget_when_changed(marker: str, context: tuple, keys: tuple[str, ...]) -> None:
    """Forget the remembered values of ``keys`` (session, saved and URL) when ``context`` —
    the dataset, column… they were suggested for — differs from the last run's."""
    ss = st.session_state
    if marker in ss and ss[marker] != context:
        for key in keys:
            ss.pop(key, None)
            ss[SAVED].pop(key, None)
            ss.get(URL_SOON, {}).pop(key, None)
            st.query_params.pop(key, None)
    ss[marker] = context


class UploadReading:
    """The reading of one uploaded file; it outlives the script run that started it.

    Another page opened while a large file is read starts the next run at once, and the old
    run stops at its next Streamlit call, a session-state access included: it reads on to the
    end but cannot store what it read. So the result waits here, off the session state, for
    the next run to take (``read_upload``).
    """

    def __init__(self, file_id: str) -> None:
        self.file_id = file_id
        self.done = threading.Event()
        self.loaded: Any = None
        self.error: str | None = ("The file's reading stopped before the end: remove it and "
                                  "upload it again.")

    def run(self, read: Callable[[Any], tuple[Any, str | None]], upload: Any) -> None:
        """Read ``upload`` with ``read`` (the dataset, or None and the message saying why);
        if ``read`` raises, the error set above stays and the exception goes on."""
        try:
            self.loaded, self.error = read(upload)
        finally:
            self.done.set()


def read_upload(key: str, read: Callable[[Any], tuple[Any, str | None]], *, tried: str,
                error: str, reading: str) -> Any:
    """What ``read`` made of the file in the uploader ``key``, once per file, else None.

    ``read(upload)`` returns the dataset, or None and the message that ``error`` then keeps.
    ``tried`` remembers the file id of the last file read, loaded or not, so that a file is
    read once; it is recorded only when the result is stored, so a run abandoned while it
    read (another page opened) leaves the file to the next run, which takes the result from
    ``reading`` (an ``UploadReading``) rather than reading the file again. Removing the file
    forgets it and its error: the same file chosen again is read again.
    """
    ss = st.session_state
    upload = ss.get(key)
    if upload is None:
        for name in (error, tried, reading):
            ss.pop(name, None)
        return None
    if ss.get(tried) == upload.file_id:
        return None
    current = ss.get(reading)
    if current is None or current.file_id != upload.file_id:
        current = UploadReading(upload.file_id)
        ss[reading] = current
        with st.spinner(f"Reading {plain(upload.name)}…"):
            current.run(read, upload)
    else:   # started by a run another page abandoned: wait for it
        with st.spinner(f"Still reading {plain(upload.name)}…"):
            current.done.wait()
    ss.pop(reading, None)
    ss[tried] = upload.file_id
    if current.error is not None:
        ss[error] = current.error
        return None
    ss.pop(error, None)
    return current.loaded


def new_upload(key: str, *, tried: str, error: str) -> Any:
    """The file in the uploader ``key`` when it has not been read yet, else None.

    ``tried`` remembers the file id of the last file read (loaded or not), so a file is read
    once; removing the file also removes the error message ``error`` it left.
    """
    ss = st.session_state
    upload = ss.get(key)
    if upload is None:
        ss.pop(error, None)   # the file the error was about has been removed
        return None
    if ss.get(tried) == upload.file_id:
        return None
    ss[tried] = upload.file_id
    return upload
