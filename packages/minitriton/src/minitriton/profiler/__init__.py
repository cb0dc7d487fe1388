"""`triton.profiler` (Proton) for programs under minitriton: a stand-in that times on the host.

    import triton.profiler as proton
    proton.start("matmul", hook="triton")      # session 0; finalize() writes matmul.hatchet
    with proton.scope("cublas", {"flops": 2. * M * N * K}):
        ...
    proton.finalize()
    import triton.profiler.viewer as proton_viewer
    tree, metrics = proton_viewer.parse(["tflop/s", "time/ms"], "matmul.hatchet")
    proton_viewer.print_tree(tree, metrics)

What it measures is host wall time (time.perf_counter_ns), never GPU time: Proton reads kernel
times from the GPU (CUPTI, roctracer), and here there is no GPU. A scope's time is the wall
time between entering and leaving it; a kernel's is the time minitriton took to simulate the
launch. Both say how long the simulation ran on the CPU, not how fast a GPU would be.

Kernel frames: every minitriton launch of the thread that started the session, while a session
is active, becomes a frame named after the kernel, under the innermost open scope (Proton too
records every kernel). With `hook="triton"` a kernel frame also gets the simulator's counts,
`flops` (tl.dot FLOPs) and `bytes` (bytes loaded and stored): minitriton does not call a
kernel's `launch_metadata`, so these are counted, not the program's own figures. Work that is
not a minitriton launch (torch.matmul inside a scope) shows only in its scope's time.

The file, `<name>.hatchet`, is JSON shaped like Proton's: a list of the frame tree and a note on
how it was measured. A frame is {"frame": {"name", "type", "kind"}, "metrics": {...},
"children": [...]}; "cpu_time (ns)" is inclusive (measured around the scope; ROOT's is the sum
of its children), "count" and the other metrics are the frame's own (the viewer sums them over
children). `viewer` reads it back and prints the tree as a table.

Not here: the "python" context (file:function:line frames), data="trace", modes such as
pcsampling, the instrumentation backend, states, and proton's command line.
"""
from __future__ import annotations

import functools
import json
import time

from ..observe.traffic import record

DEFAULT_PROFILE_NAME = "proton"
BACKENDS = (None, "cupti", "roctracer")  # recorded only: every time is the host's
CLOCK = ("host wall time (time.perf_counter_ns) around each scope and each minitriton launch; "
         "minitriton simulates kernels on the CPU, so none of it is GPU time")


class _Frame:
    def __init__(self, name, kind):
        self.name, self.kind = name, kind
        self.time_ns, self.count, self.metrics = 0, 0, {}
        self.children = {}

    def child(self, name, kind):
        if name not in self.children:
            self.children[name] = _Frame(name, kind)
        return self.children[name]

    def at(self, path):
        frame = self
        for name in path:
            frame = frame.child(name, "scope")
        return frame

    def add(self, time_ns, metrics):
        self.time_ns += time_ns
        self.count += 1
        for key, value in (metrics or {}).items():
            self.metrics[key] = self.metrics.get(key, 0) + value

    def literal(self):
        children = [c.literal() for c in self.children.values()]
        # ROOT, and a scope left while its session was inactive, have no time of their own
        time_ns = self.time_ns if self.count else \
            sum(c["metrics"]["cpu_time (ns)"] for c in children)
        return {"frame": {"name": self.name, "type": "function", "kind": self.kind},
                "metrics": {"cpu_time (ns)": time_ns, "count": self.count, **self.metrics},
                "children": children}


class _Session:
    def __init__(self, name, hook, backend):
        self.name, self.hook, self.backend = name, hook, backend
        self.active = True
        self.root = _Frame("ROOT", "root")

    @property
    def path(self):
        return self.name if self.name.endswith(".hatchet") else self.name + ".hatchet"

    def write(self):
        note = {"profiler": "minitriton.profiler, a stand-in for Triton's Proton",
                "clock": CLOCK, "hook": self.hook, "backend": self.backend}
        with open(self.path, "w") as f:
            json.dump([self.root.literal(), note], f, indent=1)


class _Profiler:
    """The sessions, the open scopes and the recording of launches (Proton's state is
    process-wide too: its API is module functions)."""

    def __init__(self):
        self.sessions, self.next_id = {}, 0
        self.scopes = []  # (id, name, start ns, metrics) of the open scopes, outermost first
        self.scope_ids = 0
        self.recording = None  # (the record() context, its Recording) while sessions exist

    @property
    def on(self):
        return bool(self.sessions)

    def active(self):
        return [s for s in self.sessions.values() if s.active]

    def drain(self):
        """Put the launches recorded since the last call under the scopes open now (called
        before anything that changes the scopes or which sessions are active)."""
        if self.recording is None:
            return
        launches = list(self.recording[1].launches)
        self.recording[1].launches.clear()
        path = [scope[1] for scope in self.scopes]
        for session in self.active():
            parent = session.root.at(path)
            for launch in launches:
                counts = {"flops": launch.dot_flops,
                          "bytes": launch.bytes_read + launch.bytes_written} \
                    if session.hook == "triton" else None
                parent.child(launch.kernel, "kernel").add(round(launch.seconds * 1e9), counts)

    def start(self, name, hook, backend):
        self.drain()
        session_id, self.next_id = self.next_id, self.next_id + 1
        self.sessions[session_id] = _Session(name, hook, backend)
        if self.recording is None:
            context = record()
            self.recording = (context, context.__enter__())
        return session_id

    def chosen(self, session):
        """The ids `session` names (None: every session), as Proton checks them."""
        if session is None:
            return list(self.sessions)
        if session not in self.sessions:
            raise ValueError(f"Session has not been initialized: {session} (sessions now: "
                             f"{sorted(self.sessions)}); pass the id proton.start() returned")
        return [session]

    def set_active(self, session, active):
        self.drain()
        for sid in self.chosen(session):
            self.sessions[sid].active = active

    def finalize(self, session):
        self.drain()
        for sid in self.chosen(session):
            self.sessions.pop(sid).write()
        if not self.sessions and self.recording is not None:
            self.recording[0].__exit__(None, None, None)
            self.recording = None
            self.scopes.clear()

    def enter(self, name, metrics):
        self.drain()
        self.scope_ids += 1
        self.scopes.append((self.scope_ids - 1, name, time.perf_counter_ns(), metrics))
        return self.scope_ids - 1

    def exit(self, name=None, metrics=None):
        self.drain()
        if not self.scopes:
            raise ValueError("exit_scope() without an open scope; call enter_scope(name) first")
        path = [scope[1] for scope in self.scopes]
        scope_id, popped, started, entered_metrics = self.scopes.pop()
        if name and name != popped:
            raise ValueError(f"Scope name mismatch: {name} != {popped}")
        elapsed = time.perf_counter_ns() - started
        added = dict(entered_metrics or {})
        for key, value in (metrics or {}).items():
            added[key] = added.get(key, 0) + value
        for session in self.active():
            session.root.at(path).add(elapsed, added)
        return scope_id


_PROFILER = _Profiler()


def start(name=None, *, context="shadow", data="tree", backend=None, mode=None, hook=None):
    """Start a profiling session (active at once); returns its id, 0 for the first. Its
    profile goes to `<name>.hatchet` (default "proton.hatchet") at finalize(). Times are host
    wall time (see the module's docstring)."""
    if context != "shadow":
        raise ValueError(f"context={context!r}: minitriton's profiler records scopes only "
                         "(context='shadow'); it has no 'python' context (file:function:line "
                         "frames)")
    if data != "tree":
        raise ValueError(f"data={data!r}: minitriton's profiler writes the frame tree only "
                         "(data='tree')")
    if backend not in BACKENDS:
        raise ValueError(f"backend={backend!r}: minitriton's profiler takes {BACKENDS} and "
                         "times on the host whichever is given (no instrumentation backend)")
    if mode is not None:
        raise ValueError(f"mode={mode!r}: minitriton's profiler has no modes (pcsampling needs "
                         "a GPU); leave mode=None")
    if hook not in (None, "triton"):
        raise ValueError(f"hook={hook!r}: use hook='triton' (kernel frames get the "
                         "simulator's flops and bytes) or None")
    return _PROFILER.start(DEFAULT_PROFILE_NAME if name is None else str(name), hook, backend)


def activate(session=None):
    """Record into `session` again (None: every session)."""
    _PROFILER.set_active(session, True)


def deactivate(session=None):
    """Stop recording into `session` (None: every session); what it holds is kept."""
    _PROFILER.set_active(session, False)


def finalize(session=None, output_format=""):
    """Write `session`'s profile (None: every session's) to `<name>.hatchet` and end it."""
    if output_format not in ("", "hatchet"):
        raise ValueError(f"output_format={output_format!r}: minitriton's profiler writes "
                         "'hatchet' only")
    _PROFILER.finalize(session)


def enter_scope(name, *, metrics=None):
    """Open a scope (host-timed) under the open ones; None while no session exists."""
    if not _PROFILER.on:
        return None
    return _PROFILER.enter(name, metrics)


def exit_scope(name=None, *, metrics=None):
    """Close the innermost scope, adding its host wall time to every active session."""
    if not _PROFILER.on:
        return None
    return _PROFILER.exit(name, metrics)


class scope:
    """A host-timed scope, as a context manager or a decorator:

        with proton.scope("step", {"flops": 2. * M * N * K}):
            ...
    """

    def __init__(self, name, metrics=None):
        self.name, self.metrics = name, metrics
        self.entered = False

    def __enter__(self):
        self.entered = enter_scope(self.name, metrics=self.metrics) is not None
        return self

    def __exit__(self, exc_type, exc_value, traceback):
        if self.entered and _PROFILER.on:
            exit_scope(self.name)

    def __call__(self, func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with scope(self.name, self.metrics):
                return func(*args, **kwargs)
        return wrapper


class cpu_timed_scope(scope):
    """As Proton's: a scope timed on the host, which every scope here is."""

    def __init__(self, name, metrics=None):
        if metrics and "cpu_time" in metrics:
            raise ValueError("The metric name 'cpu_time' is reserved.")
        super().__init__(name, metrics)


def profile(func=None, *, name=None, context="shadow", data="tree", backend=None, mode=None,
            hook=None):
    """Decorator: each call of the function runs in a new session (deactivated when it
    returns; finalize() writes it)."""
    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            session = start(name, context=context, data=data, backend=backend, mode=mode,
                            hook=hook)
            try:
                return f(*args, **kwargs)
            finally:
                deactivate(session)
        return wrapper
    return decorate(func) if func is not None else decorate


__all__ = ["start", "activate", "deactivate", "finalize", "scope", "cpu_timed_scope",
           "enter_scope", "exit_scope", "profile", "DEFAULT_PROFILE_NAME"]
