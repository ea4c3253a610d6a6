"""One student's session of the app over its websocket, as a browser holds one (no browser): open, run a view with
query parameters, upload a file, close; and the views of the navigation a student visits. bench.load runs many at
once, bench.warm one per replica.
"""
from __future__ import annotations

import asyncio
import random
import time
import urllib.parse
import urllib.request
import uuid

WORDS = "river bank music bread snow train garden money cat dog hill lake song road city light".split()


def views() -> list[str]:
    """Every view's page name in the navigation, home first as ''."""
    from ui.views import present

    return ["" if v.stem == "home" else v.stem for v in present()]


def sentence(rng: random.Random) -> str:
    return "The " + " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 18))) + "."


class Student:
    """One browser session over the websocket: run a page with a query string, press a button, upload a file."""

    def __init__(self, url: str) -> None:
        self.url, self.ws, self.cookie, self.refusals = url, None, "", []
        self.session_id, self.uploaders = "", {}  # the server's id of this session; file_uploader label -> id

    async def open(self) -> None:
        import websockets

        def first_get():  # the page itself, as a browser loads it first: nginx answers with the sticky cookie;
            jar = {}  # then the health check the page polls, which sets Streamlit's XSRF cookie (for uploads)
            for path in ("/", "/_stcore/health"):
                ask = urllib.request.Request(self.url + path, headers={"Cookie": "; ".join(f"{k}={v}" for k, v in
                                                                                          jar.items())})
                with urllib.request.urlopen(ask, timeout=60) as r:
                    for cookie in r.headers.get_all("Set-Cookie") or []:
                        name, _, value = cookie.split(";")[0].partition("=")
                        jar[name] = value
            return "; ".join(f"{k}={v}" for k, v in jar.items())

        self.cookie = await asyncio.to_thread(first_get)
        ws_url = self.url.replace("http://", "ws://") + "/_stcore/stream"
        self.ws = await websockets.connect(ws_url, subprotocols=["streamlit"], max_size=2**27, open_timeout=60,
                                           additional_headers={"Cookie": self.cookie, "Origin": self.url})

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()

    async def run(self, page: str, query: dict, widgets=(), timeout_s: float = 120.0) -> tuple[float, list[str], dict]:
        """Run `page` with this query string (and widget states); -> (seconds, problems, buttons {label: id}).
        self.refusals collects the st.error sentences shown (a refused request is not a server error)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        msg = BackMsg()
        msg.rerun_script.query_string = urllib.parse.urlencode(query)
        msg.rerun_script.page_name = page
        for w in widgets:
            msg.rerun_script.widget_states.widgets.append(w)
        start = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        problems, buttons = [], {}
        deadline = start + timeout_s
        while True:
            try:
                raw = await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.perf_counter()))
            except TimeoutError:
                return time.perf_counter() - start, problems + [f"{page or 'home'}: no end after {timeout_s:.0f} s"], {}
            fwd = ForwardMsg()
            fwd.ParseFromString(raw)
            kind = fwd.WhichOneof("type")
            if kind == "new_session":
                self.session_id = fwd.new_session.initialize.session_id
            if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
                el = fwd.delta.new_element
                if el.WhichOneof("type") == "file_uploader":
                    self.uploaders[el.file_uploader.label] = el.file_uploader.id
                if el.WhichOneof("type") == "exception":
                    problems.append(f"{page or 'home'}: {el.exception.type}: {el.exception.message[:200]}")
                elif el.WhichOneof("type") == "button":
                    buttons[el.button.label] = el.button.id
                elif el.WhichOneof("type") == "alert" and el.alert.format == 1:  # Alert.ERROR
                    self.refusals.append(f"{page or 'home'}: {el.alert.body[:200]}")
            elif kind == "script_finished":
                status = ForwardMsg.ScriptFinishedStatus.Name(fwd.script_finished)
                if status == "FINISHED_EARLY_FOR_RERUN":
                    continue
                if status == "FINISHED_FRAGMENT_RUN_SUCCESSFULLY":
                    continue
                if status != "FINISHED_SUCCESSFULLY":
                    problems.append(f"{page or 'home'}: {status}")
                return time.perf_counter() - start, problems, buttons

    async def press(self, page: str, query: dict, label: str, timeout_s: float = 120.0) -> list[str]:
        """Run the page, then press the button whose label starts with `label`; timeout_s for both runs (the query
        may start heavy work itself: Precision's measure toggle)."""
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        _, problems, buttons = await self.run(page, query, timeout_s=timeout_s)
        ids = [i for lab, i in buttons.items() if lab.startswith(label)]
        if not ids:
            return problems + [f"{page}: no button {label!r}"]
        before = len(self.refusals)
        _, more, _ = await self.run(page, query, [WidgetState(id=ids[0], trigger_value=True)], timeout_s)
        return problems + more + self.refusals[before:]  # here a refusal means the heavy request did not run

    async def upload(self, page: str, query: dict, name: str, data: bytes,
                     timeout_s: float = 120.0) -> tuple[float, list[str]]:
        """Run the page, then upload `data` as the browser does: ask the session for an upload URL, PUT the file
        there (multipart, with the XSRF cookie's token as its header), run the page with the uploader's new state.
        -> (seconds of that last run, problems)."""
        from streamlit.proto.BackMsg_pb2 import BackMsg
        from streamlit.proto.Common_pb2 import UploadedFileInfo
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.proto.WidgetStates_pb2 import WidgetState

        self.uploaders = {}
        _, problems, _ = await self.run(page, query)
        if not self.uploaders:
            return 0.0, problems + [f"{page}: no file uploader"]
        request = BackMsg()
        request.file_urls_request.request_id = uuid.uuid4().hex
        request.file_urls_request.session_id = self.session_id
        request.file_urls_request.file_names.append(name)
        await self.ws.send(request.SerializeToString())
        while True:
            fwd = ForwardMsg()
            fwd.ParseFromString(await asyncio.wait_for(self.ws.recv(), 60))
            if fwd.WhichOneof("type") == "file_urls_response":
                urls = fwd.file_urls_response.file_urls[0]
                break
        xsrf = next((c.split("=", 1)[1] for c in self.cookie.split("; ") if c.startswith("_streamlit_xsrf=")), "")
        boundary = uuid.uuid4().hex
        body = (f'--{boundary}\r\nContent-Disposition: form-data; name="{urls.file_id}"; filename="{name}"\r\n'
                "Content-Type: application/octet-stream\r\n\r\n").encode() + data + f"\r\n--{boundary}--\r\n".encode()
        put = urllib.request.Request(self.url + urls.upload_url, data=body, method="PUT", headers={
            "Content-Type": f"multipart/form-data; boundary={boundary}", "Cookie": self.cookie, "X-Xsrftoken": xsrf,
            "Origin": self.url})
        try:
            await asyncio.to_thread(lambda: urllib.request.urlopen(put, timeout=60).read())
        except OSError as err:
            return 0.0, problems + [f"{page}: upload refused: {err}"]
        state = WidgetState(id=next(iter(self.uploaders.values())))
        state.file_uploader_state_value.uploaded_file_info.append(
            UploadedFileInfo(file_id=urls.file_id, name=name, size=len(data), file_urls=urls))
        seconds, more, _ = await self.run(page, query, [state], timeout_s=timeout_s)
        return seconds, problems + more
