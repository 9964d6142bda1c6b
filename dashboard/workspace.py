"""What a reload keeps (issue 32, items 2 and 3): the open plan and an upload's identity in the
URL, the notice of an upload to upload again, and keeping an upload on the server.

A reload starts a new session: the page, the dataset's choice and the page's settings come
back from the URL (``dashboard.state``); so does the saved plan that was open (``plan``: its
id) and, for an upload, the first 16 hexadecimal digits of its content identity (``data``;
never a column name or a value). The upload's bytes are gone with the old session: until the
same content is uploaded again (under any name), every page says which file to upload and
what waits for it on the server (its declarations, ``release.declarations``; its saved
plans, ``dashboard.plan_library`` under ``content:<identity>``). "Keep this file on the
server" writes it into the data folder (``dashboard.data.kept``): then it is a data-folder
file, and a reload or a restart finds it there.
"""

from __future__ import annotations

import re
import uuid

import streamlit as st

from dashboard import datasets, plan_store, state
from dashboard.data import folder, kept
from dashboard.data_source import identity_of
from dashboard.plan_library import PlanLibrary, PlanLibraryError, plans_path
from dashboard.plan_store import UPLOADER, scoped
from dashboard.text import plain
from engine import DATA_ENV
from engine.sources import data_folder
from release import access, roles
from release.access import Action, denied_message
from release.declarations import DeclarationsError, DeclarationStore

__all__ = ["UPLOAD_CHOICE", "IDENTITY_PARAM", "PLAN_PARAM", "prepare_plans", "waiting_notice",
           "waiting_words", "mirror_in_url", "write_url", "file_controls", "keep_control",
           "remove_control", "KEEP_LABEL", "REMOVE_LABEL"]

UPLOAD_CHOICE = "Upload your own CSV"   # the sidebar's choice of an upload
IDENTITY_PARAM = "data"   # URL: the start of the content identity of the upload held/awaited
PLAN_PARAM = "plan"       # URL: the id of the saved plan open
PREFIX = 16               # hexadecimal digits of the identity in the URL (64 bits)
KEEP_LABEL = "Keep this file on the server"
REMOVE_LABEL = "Remove from the server"

_STARTED = "workspace_started"
_AWAITED = "workspace_awaited"   # the identity's start (PREFIX hex digits) held or awaited
_PLAN = "workspace_plan"         # the saved plan open: opened again on a dataset's first look
_NAMED = "workspace_named"       # upload ids whose name is recorded with their identity
_KEPT = "workspace_kept"         # data key -> whether that data-folder file was kept here
_HELD = "workspace_held"         # (upload id, name, bytes) of a file taken back from the server
_MESSAGE = "workspace_message"   # (ok, text) of the last keep or remove, said once
_CONFIRM = "workspace_remove_confirm"
_NOT_NAMES = ("upload:", "file:", "builtin:", "content:", "sha256:")


def _start() -> None:
    """On the session's first run: what the URL says (the session's own values after)."""
    ss = st.session_state
    if _STARTED in ss:
        return
    ss[_STARTED] = True
    raw = st.query_params.get(IDENTITY_PARAM)
    if isinstance(raw, str) and re.fullmatch(f"[0-9a-f]{{{PREFIX}}}", raw):
        ss[_AWAITED] = raw
    raw = st.query_params.get(PLAN_PARAM)
    if isinstance(raw, str) and re.fullmatch(r"[0-9]{1,12}", raw):
        ss[_PLAN] = int(raw)


def _upload_in_use() -> bool:
    ss = st.session_state
    return ss.get(state.UPLOADED) is not None and ss.get(state.DATASET) is ss[state.UPLOADED]


def _waiting() -> bool:
    """The sidebar asks for an upload and none is held: the pages use a stand-in."""
    ss = st.session_state
    return ss.get("dataset_choice") == UPLOAD_CHOICE and ss.get(state.UPLOADED) is None


def _identity(loaded, key: str) -> str | None:
    try:
        return identity_of(loaded, key).content_hash
    except Exception:  # noqa: BLE001 — e.g. DuckDB's expression limit on a very wide file
        return None


def _short(identity: str) -> str:
    return identity.removeprefix("sha256:")[:PREFIX]


def _is_kept(loaded, key: str) -> bool:
    known = st.session_state.setdefault(_KEPT, {})
    if key not in known:
        known[key] = loaded.file is not None and kept.kept_dataset(loaded.file.path) is not None
    return known[key]


def _record_name(upload_id: str, identity: str, name: str) -> None:
    """The upload's name beside its identity (once per upload): what the notice names."""
    named = st.session_state.setdefault(_NAMED, set())
    if upload_id in named:
        return
    named.add(upload_id)
    try:
        DeclarationStore().declare(scoped(identity), names=[name])
    except (DeclarationsError, ValueError):
        pass   # the notice after a reload then says "the file you uploaded"


def prepare_plans(key: str) -> None:
    """Before the plan is looked at: an upload's (or a kept file's) plans are saved under its
    content; a dataset's first look opens the plan that was open (the URL's, after a
    reload) when it is this dataset's."""
    _start()
    ss = st.session_state
    loaded = ss[state.DATASET]
    identity = None
    if _upload_in_use():
        identity = _identity(loaded, key)
        if identity is not None:
            ss[_AWAITED] = _short(identity)
            _record_name(ss.get(state.UPLOAD_ID) or key, identity, loaded.name)
            identity = scoped(identity)   # an upload's plans are its uploader's
    elif _is_kept(loaded, key):
        identity = _identity(loaded, key)
    if identity is not None:
        plan_store.set_identity(key, "content:" + identity)
    if ss.get(_PLAN) is not None:
        plan_store.open_first(key, ss[_PLAN])


def waiting_words(name: str | None, *, schema: bool, unit: bool, plans: int,
                  kept_as: str | None = None) -> str:
    """"Upload Males.csv again: its schema, its unit and 2 saved plans are waiting." (``kept_as``:
    the same content is a data-folder file of that name, kept since: choose it instead)."""
    parts = [words for words, there in (("its schema", schema), ("its unit", unit)) if there]
    if plans:
        parts.append(f"{plans} saved plan{'s' if plans != 1 else ''}")
    named = name or "the file you uploaded"
    start = (f"{named} is kept on the server as {kept_as}: choose it in the sidebar's list"
             if kept_as else f"Upload {named} again")
    if not parts:
        return f"{start} to go on with it."
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    verb = "is" if len(parts) == 1 and plans <= 1 else "are"
    return f"{start}: {listed} {verb} waiting."


def _awaited() -> tuple[str | None, bool, bool, int, str | None] | None:
    """(name, schema kept, unit kept, saved plans, name of a kept copy) of the upload the URL
    names, if known."""
    short = st.session_state.get(_AWAITED)
    if not short:
        return None
    try:
        store = DeclarationStore()
        found = store.read("looking an upload up", "SELECT DISTINCT dataset FROM names WHERE "
                           "dataset LIKE ? UNION SELECT DISTINCT dataset FROM events WHERE "
                           "dataset LIKE ?", (f"sha256:{short}%",) * 2)
        # another uploader's key (sign-in on) is not theirs to see: only shared keys and own
        bases = {d.split(UPLOADER)[0] for (d,) in found
                 if UPLOADER not in d or d == scoped(d.split(UPLOADER)[0])}
        if len(bases) != 1:
            return None
        identity = bases.pop()
        declared = store.latest(identity)
        own = store.latest(scoped(identity)) if scoped(identity) != identity else None
        plans = len(PlanLibrary(plan_store_path()).plans("content:" + scoped(identity)))
    except (DeclarationsError, PlanLibraryError):
        return None
    if declared is None and own is None:
        return None
    names = [n for n in (*(declared.names if declared else ()), *(own.names if own else ()))
             if not n.startswith(_NOT_NAMES)]
    return (names[-1] if names else None,
            declared is not None and declared.schema is not None
            and declared.schema.text is not None,
            declared is not None and declared.unit is not None
            and declared.unit.text is not None, plans,
            _kept_name(identity))


def _kept_name(identity: str) -> str | None:
    path = kept.find_kept(identity)
    return None if path is None else path.name


def plan_store_path() -> str:
    """The plans file this session saves to (fixed at its first use)."""
    return st.session_state.get("release_plan_library_path") or str(plans_path())


def waiting_notice() -> None:
    """At the top of every page, while the sidebar waits for an upload the URL names: which
    file to upload again and what waits for it."""
    _start()
    if not _waiting():
        return
    found = _awaited()
    if found is None:
        return
    name, schema, unit, plans, kept_as = found
    words = plain(waiting_words(name, schema=schema, unit=unit, plans=plans, kept_as=kept_as),
                  limit=400)
    if kept_as is None:
        words += (" Choose it in the sidebar: an upload stays in its session's memory only, so "
                  "a reload forgets the file (never what was declared or planned for it).")
    st.info(words, icon=":material/upload_file:")


def write_url(page: str) -> None:
    """The URL of ``page`` as this run left it so far (``state.write_url``), with the open
    plan and the upload's identity."""
    mirror_in_url(state.dataset_key())
    state.write_url(page)


def mirror_in_url(key: str) -> None:
    """The open plan and the upload's identity, in the URL at the run's end."""
    _start()
    ss = st.session_state
    if not _waiting():   # while waiting, the plan open is the awaited upload's
        saved = plan_store.current(key)
        ss[_PLAN] = None if saved is None else saved.id
    soon = ss.setdefault(state.URL_SOON, {})
    owners = ss.setdefault(state.URL_OWNER, {})
    for param, value in ((IDENTITY_PARAM, ss.get(_AWAITED)), (PLAN_PARAM, ss.get(_PLAN))):
        if value is None:
            owners[param] = "\x00"   # no page's path: write_url takes it out of the URL
            soon.pop(param, None)
        else:
            soon[param] = str(value)


# -- keeping an upload on the server --------------------------------------------------------

def _say_done() -> None:
    said = st.session_state.pop(_MESSAGE, None)
    if said is not None:
        ok, text = said
        (st.success if ok else st.error)(plain(text, limit=600),
                                         icon=":material/check:" if ok else ":material/error:")


def _upload_bytes(uploader_key: str) -> tuple[str, bytes] | None:
    """The name and bytes of the upload in use (the uploader's file, or one held back)."""
    ss = st.session_state
    upload = ss.get(uploader_key)
    if upload is not None and upload.file_id == ss.get(state.UPLOAD_ID):
        return upload.name, upload.getvalue()
    held = ss.get(_HELD)
    if held is not None and held[0] == ss.get(state.UPLOAD_ID):
        return held[1], held[2]
    return None


def _keep(uploader_key: str) -> None:
    """The button's callback: write the upload into the data folder and open it there."""
    ss = st.session_state
    got = _upload_bytes(uploader_key)
    identity = _identity(ss[state.DATASET], state.dataset_key()) if _upload_in_use() else None
    if got is None:
        ss[_MESSAGE] = (False, "This upload is no longer in the uploader: upload the file "
                               "again, then keep it.")
        return
    if identity is None:
        ss[_MESSAGE] = (False, "This file cannot be identified by its content (too many "
                               "columns?), so it cannot be kept: it stays in this session's "
                               "memory.")
        return
    path = kept.find_kept(identity)   # the same content kept before: not a second copy
    said = "Already kept on the server as" if path is not None else "Kept on the server as"
    try:
        path = path or kept.keep_upload(got[1], got[0], identity)
    except kept.KeepError as exc:
        ss[_MESSAGE] = (False, str(exc))
        return
    if scoped(identity) != identity:   # its uploader's plans become the kept file's (shared)
        try:
            PlanLibrary(plan_store_path()).move("content:" + scoped(identity),
                                                "content:" + identity)
        except PlanLibraryError:
            pass   # kept all the same; the plans stay with their uploader
    ss["dataset_choice"] = folder.CHOICE_PREFIX + path.name
    for name in (state.UPLOADED, state.UPLOAD_ID, _HELD, _AWAITED):
        ss.pop(name, None)   # the data folder holds it now: no copy in this session
    ss[_MESSAGE] = (True, f"{said} {path.name} in the data folder: it opens "
                          "again after a reload or a restart, and every user of this server "
                          "can choose it. Its declarations and saved plans follow it.")


def _may_keep() -> bool:
    """Whether the person acting may keep data on the server (or remove it): a steward."""
    try:
        return roles.may(access.current(), Action.KEEP_DATA)
    except (access.AccessError, roles.RolesError):
        return False


def file_controls(uploader_key: str) -> None:
    """Under the dataset's caption: keep an upload on the server, or remove a file kept."""
    _say_done()
    keep_control(uploader_key)
    remove_control()


def keep_control(uploader_key: str) -> None:
    """Keep the upload in use on the server (or why not)."""
    if not _upload_in_use():
        return
    if not _may_keep():
        st.caption(denied_message(Action.KEEP_DATA) + " This upload stays in your session.")
        return
    if data_folder() is None:
        st.button(KEEP_LABEL, key="workspace_keep", disabled=True)
        st.caption(f"Keeping uploads needs a data folder on the server: its administrator "
                   f"sets {DATA_ENV} to one.")
        return
    st.button(KEEP_LABEL, key="workspace_keep", on_click=_keep, args=(uploader_key,),
              help="Writes this file into the server's data folder, where every user of this "
                   "server can open it, and where a reload or a restart finds it. Without "
                   "this, it stays in this session's memory only.")


def _take_back(path: str, name: str) -> None:
    """The confirmation's callback: delete the kept file; the session holds it in memory."""
    ss = st.session_state
    ss[_CONFIRM] = False
    try:
        data = kept.remove_kept(path)
    except kept.KeepError as exc:
        ss[_MESSAGE] = (False, str(exc))
        return
    ss.get(_KEPT, {}).clear()
    ss["dataset_choice"] = UPLOAD_CHOICE
    try:
        loaded = datasets.load_upload(data, name)
    except Exception:  # noqa: BLE001 — it was read before; if not now, ask for it again
        ss[state.DATASET] = state.builtin(state.DEFAULT_DATASET)   # the file is gone
        ss[_MESSAGE] = (True, f"{name} was removed from the server. Upload it again to go on "
                              "with it.")
        return
    upload_id = f"held-{uuid.uuid4().hex}"
    ss[state.UPLOADED] = ss[state.DATASET] = loaded
    ss[state.UPLOAD_ID] = upload_id
    ss[_HELD] = (upload_id, name, data)
    ss[_MESSAGE] = (True, f"{name} was removed from the server's data folder. This session "
                          "holds it in memory (a reload forgets it); its declarations and "
                          "saved plans stay on the server.")


def remove_control() -> None:
    """A data-folder file kept from an upload: remove it from the server, confirmed."""
    ss = st.session_state
    loaded = ss[state.DATASET]
    if loaded.file is None or not _is_kept(loaded, state.dataset_key()) or not _may_keep():
        return
    if not ss.get(_CONFIRM):
        st.button(REMOVE_LABEL, key="workspace_remove",
                  on_click=lambda: ss.__setitem__(_CONFIRM, True),
                  help="Deletes this file, kept from an upload, from the server's data folder.")
        return
    st.warning(f"Delete {plain(loaded.name)} from the server's data folder? This session keeps "
               "it in memory until a reload; other users can no longer open it.")
    st.button("Yes, remove it", key="workspace_remove_yes", type="primary",
              on_click=_take_back, args=(str(loaded.file.path), loaded.name))
    st.button("Cancel", key="workspace_remove_no",
              on_click=lambda: ss.__setitem__(_CONFIRM, False))
