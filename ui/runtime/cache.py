"""What one server keeps between requests, bounded in bytes: loaded models, and results keyed by their input.

Two stores shared by every session of the process, each with a byte budget from `limits` (model_cache_bytes,
result_cache_bytes): a value's size is measured when it is stored (parameters and buffers of a torch module,
nbytes of arrays, lengths of strings; see `sizeof`), and the least recently used values go until the new one
fits. A value larger than the whole budget is returned but not kept. Values unused for `IDLE_S` (a model:
`limits.current().model_idle_s`, 5 minutes hosted) are dropped on the next store or by the sweeper within a
minute (start_sweeper), so a server's memory comes back down after a class. Concurrent requests for the same key
wait for one build instead of building twice (two sessions opening the same model at once load it once).

Kept results are shared, not copied: arrays in them are made read-only, so a caller that tries to change one
in place gets an error instead of changing it for everyone. Exceptions (e.g. ValueError for bad input) are
never kept. Nothing here knows about views; st.cache_data and st.cache_resource are not used for anything
that can be large, nor is any hand-made dict: every per-server store of the app is one of these two, and code
outside this module reaches them only through memo, kept and peek (tests/ui/runtime/test_stores.py).

    @memo("results")                      # or "models"
    def trace(name, device, dtype, text, text_b): ...
    @memo("results", key=lambda model, key, text: (key, text))   # a model argument: the key says what counts
    def scores(model, key, text): ...
    kept(("own-plan", key), compute)      # compute() draws its own bar or buttons; a hit draws nothing
    peek(("own-plan", key))  -> (found, value)   # builds nothing
    stats()  -> {"models": {"bytes": ..., "budget": ..., "entries": ...}, "results": {...}}
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import sys
import threading
import time
import types
from collections import OrderedDict
from collections.abc import Callable

import numpy as np
import streamlit as st

import limits
import models
from analysis.trace import AttentionTrace
from limits import memory
from models.devices import resolve
from ui.runtime import streamlit_private, work

IDLE_S = 15 * 60  # a value nobody asked for in this long is dropped at the next store


def sizeof(value, _seen: set | None = None) -> int:
    """Bytes a value holds, counting each object once: tensors and modules by storage, arrays by nbytes.

    [np.zeros(10, np.float32), "ab"] -> 40 + 2 (plus small Python overheads)
    """
    seen = set() if _seen is None else _seen
    if id(value) in seen:
        return 0
    seen.add(id(value))
    if isinstance(value, np.ndarray):
        return value.nbytes if value.base is None else sizeof(value.base, seen)
    if isinstance(value, (str, bytes, bytearray)):
        return len(value)
    if isinstance(value, (int, float, bool, type(None))):
        return sys.getsizeof(value)
    torch = sys.modules.get("torch")
    if torch is not None:
        if isinstance(value, torch.Tensor):
            from torch.utils._python_dispatch import is_traceable_wrapper_subclass

            if is_traceable_wrapper_subclass(value):  # torchao's quantized weights: their bytes are in inner tensors
                names, _ = value.__tensor_flatten__()
                return sum(sizeof(getattr(value, n), seen) for n in names)
            storage = value.untyped_storage()
            key = ("storage", storage.data_ptr())
            if key in seen:
                return 0
            seen.add(key)
            return storage.nbytes()
        if isinstance(value, torch.nn.Module):
            return sum(sizeof(t, seen) for t in [*value.parameters(), *value.buffers()])
    if isinstance(value, types.ModuleType):  # shared by everything: never a kept value's own bytes
        return 0
    if isinstance(value, types.FunctionType):  # a closure holds what it captured (a kept probe's tensors)
        return sys.getsizeof(value) + sum(sizeof(_contents(c), seen) for c in value.__closure__ or ())
    if isinstance(value, dict):
        return sum(sizeof(k, seen) + sizeof(v, seen) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return sys.getsizeof(value) + sum(sizeof(v, seen) for v in value)
    if hasattr(value, "__dict__"):
        return sizeof(vars(value), seen)
    if hasattr(value, "__dataclass_fields__"):
        return sum(sizeof(getattr(value, f), seen) for f in value.__dataclass_fields__)
    return sys.getsizeof(value)


def _contents(cell):
    """What a closure's cell holds (None for a cell not yet filled)."""
    try:
        return cell.cell_contents
    except ValueError:
        return None


def _freeze(value):
    """Make the arrays in a kept result read-only (shared by every session)."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, AttentionTrace):
        _freeze(value.weights)
        for part in getattr(value, "parts", {}).values():
            _freeze(part)
    elif isinstance(value, dict):
        for v in value.values():
            _freeze(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _freeze(v)
    return value


class ByteCache:
    """A least-recently-used store whose values together stay under budget() bytes."""

    def __init__(self, name: str, budget: Callable[[], int], idle_s: Callable[[], float] = lambda: IDLE_S) -> None:
        self.name, self.budget, self.idle_s = name, budget, idle_s
        self._values: OrderedDict = OrderedDict()  # key -> (value, bytes, last used)
        self._lock = threading.Lock()
        self._building: dict = {}                   # key -> Lock held while one caller builds it

    @property
    def nbytes(self) -> int:
        with self._lock:
            return sum(size for _, size, _ in self._values.values())

    def __len__(self) -> int:
        return len(self._values)

    def clear(self) -> None:
        with self._lock:
            self._values.clear()
        memory.release_freed()

    def _hit(self, key):
        with self._lock:
            if key in self._values:
                value, size, _ = self._values.pop(key)
                self._values[key] = (value, size, time.monotonic())
                return True, value
        return False, None

    def peek(self, key) -> tuple[bool, object]:
        """(True, the kept value) if key is kept (it counts as a use), else (False, None); builds nothing."""
        return self._hit(key)

    def get(self, key, build: Callable[[], object]):
        """The kept value for key, or build() (kept if it fits the budget); one build per key at a time."""
        found, value = self._hit(key)
        if found:
            return value
        with self._lock:
            building = self._building.setdefault(key, threading.Lock())
        with building:
            found, value = self._hit(key)
            if found:
                return value
            try:
                value = build()
                self.put(key, value)  # kept before the key stops building: a caller arriving now finds it
            finally:
                with self._lock:
                    self._building.pop(key, None)
            return value

    def drop_idle(self) -> None:
        """Drop the values unused for idle_s() (IDLE_S; kept models: limits' model_idle_s) and give their memory
        back (the sweeper calls it every minute, so a quiet server comes back down without waiting for a store)."""
        now, limit = time.monotonic(), self.idle_s()
        with self._lock:
            idle = [k for k, (_, _, used) in self._values.items() if now - used > limit]
            for k in idle:
                del self._values[k]
        if idle:
            memory.release_freed()

    def put(self, key, value) -> None:
        start_sweeper()
        size, budget, now, idle = sizeof(value), self.budget(), time.monotonic(), self.idle_s()
        dropped = False
        with self._lock:
            for k in [k for k, (_, _, used) in self._values.items() if now - used > idle]:
                del self._values[k]
                dropped = True
            if size <= budget:
                used = sum(s for _, s, _ in self._values.values())
                while self._values and used + size > budget:
                    _, (_, s, _) = self._values.popitem(last=False)
                    used -= s
                    dropped = True
                self._values[key] = (_freeze(value) if self.name == "results" else value, size, now)
        if dropped:
            memory.release_freed()


STORES = {
    "models": ByteCache("models", lambda: limits.current().model_cache_bytes, lambda: limits.current().model_idle_s),
    "results": ByteCache("results", lambda: limits.current().result_cache_bytes),
}


_SWEEPER: list[threading.Thread] = []
_SWEEPER_LOCK = threading.Lock()
SWEEP_S = 60


def _sweep() -> None:
    while True:
        time.sleep(SWEEP_S)
        for store in STORES.values():
            store.drop_idle()


def start_sweeper() -> None:
    """Once per process: a daemon thread that drops idle values from every store each SWEEP_S."""
    with _SWEEPER_LOCK:
        if not _SWEEPER:
            _SWEEPER.append(threading.Thread(target=_sweep, name="cache-sweeper", daemon=True))
            _SWEEPER[0].start()


def _hashable(arg):
    """Arrays become (shape, dtype, digest of their bytes), so results of arrays can be keyed."""
    if isinstance(arg, np.ndarray):
        return ("ndarray", arg.shape, str(arg.dtype), hashlib.blake2b(np.ascontiguousarray(arg).data,
                                                                      digest_size=16).hexdigest())
    if isinstance(arg, (list, tuple)):
        return tuple(_hashable(a) for a in arg)
    if isinstance(arg, dict):  # in its order (a figure's panels and legend follow it)
        return ("dict", tuple((k, _hashable(v)) for k, v in arg.items()))
    return arg


def memo(store: str, spinner: str | None = None, key: Callable[..., object] | None = None,
         keep: Callable[..., bool] | None = None):
    """Keep fn's results in STORES[store], keyed by fn and its arguments (arrays by content); fn is called with
    them positionally. fn.peek(*args) says whether a result is kept without computing it; fn.key(*args) is the key
    it is kept under (a job's identity in session state: arrays by digest, not by their bytes).

    key: for arguments that must not be hashed (a model, a progress callback): called with fn's arguments (defaults
    applied), it returns what identifies the result instead; arrays in what it returns are keyed by content.
    keep: called with fn's arguments, False for a result made for its caller alone, neither looked up nor kept (one
    too large to hold for whoever asks next); None keeps every result.

        @memo("results", key=lambda model, model_key, text: (model_key, text))    # the model itself is not hashed
    """
    def wrap(fn):
        name = f"{fn.__code__.co_filename}:{fn.__qualname__}"  # views run as scripts: all their modules are __main__
        signature = inspect.signature(fn)

        def bound(args: tuple, kwargs: dict) -> tuple[tuple, tuple]:
            """(the arguments in order, their key): f(1, b=2) and f(1, 2) are one key."""
            b = signature.bind(*args, **kwargs)
            b.apply_defaults()
            args = tuple(b.arguments.values())
            return args, (name, _hashable(args if key is None else key(*args)))

        @functools.wraps(fn)
        def cached(*args, **kwargs):
            args, k = bound(args, kwargs)
            if keep is not None and not keep(*args):
                return fn(*args)
            found, value = STORES[store].peek(k)
            if found:
                return value
            if spinner and streamlit_private.in_a_run():  # a page: say what it waits for
                with st.spinner(spinner):
                    return STORES[store].get(k, lambda: fn(*args))
            return STORES[store].get(k, lambda: fn(*args))

        def peek(*args, **kwargs) -> tuple[bool, object]:
            """(True, the kept result) for these arguments, or (False, None): computes nothing."""
            return STORES[store].peek(bound(args, kwargs)[1])

        cached.uncached, cached.peek, cached.key = fn, peek, lambda *args, **kwargs: bound(args, kwargs)[1]
        return cached
    return wrap


def peek(key, store: str = "results") -> tuple[bool, object]:
    """(True, the value kept under key by kept()) or (False, None): computes nothing, draws
    nothing; a hit counts as a use."""
    return STORES[store].peek(key)


def kept(key, compute: Callable[[], object], store: str = "results", heavy: bool = False, weight: int = 1):
    """STORES[store]'s value for key, else compute() (kept if it fits the budget), for work that draws its own
    progress bar or buttons while it runs: a hit returns at once and draws nothing (st.cache_data would replay
    them on every rerun). key: a tuple that starts with what it is, ("curve", model, ...). heavy: compute waits
    its turn among the server's heavy requests (ui.runtime.work.queued, `weight` slots), saying for how many, and the
    memory it freed goes back to the system after it."""
    found, value = STORES[store].peek(key)
    if found or not heavy:
        return value if found else STORES[store].get(key, compute)
    # the turn first, then the key's build lock: a build never waits for a turn while holding its key
    return work.queued(lambda: STORES[store].get(key, compute), weight)


def stats() -> dict:
    return {name: {"bytes": s.nbytes, "budget": s.budget(), "entries": len(s)} for name, s in STORES.items()}


@memo("models", spinner="Loading the model…")
def model(name: str, device: str, dtype: str):
    """models.load on a device that really works (resolve falls back to cpu and says why); models.shared: the
    lesson's answers (classroom.answers) read the very instance kept here, not a second copy. A request that fell
    back (cuda asked, cpu given) gets its own copy carrying that notice: the shared instance is never written to."""
    device, dtype, notices = resolve(device, dtype)
    if not notices:
        return models.shared(name, device, dtype)
    m = models.load(name, device, dtype)
    m.notices = tuple(m.notices) + notices
    return m


def task_model(spec: str, device: str, dtype: str):
    """A local folder with its task head (models.task_head: a classifier, tagger, ...), for the views that judge or
    explain its predictions (Pruning your own model, Attribution): the very model every other view shows, kept
    here once (no second copy); UserError when it kept no head."""
    from models import task_head

    return task_head.judged(model(models.HF_PREFIX + spec, device, dtype), spec)


@memo("results", spinner="Running the model…")
def trace(name: str, device: str, dtype: str, text: str, text_b: str | None, new_tokens: int = 0) -> AttentionTrace:
    """The model's attention for this input (a decoder's with `new_tokens` written after it); ValueError (not
    kept) for unusable input."""
    m = model(name, device, dtype)
    return m.attend(text, text_b, new_tokens=new_tokens) if new_tokens else m.attend(text, text_b)
