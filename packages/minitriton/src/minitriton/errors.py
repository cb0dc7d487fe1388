"""Exceptions raised by minitriton.

Every error raised while a kernel runs carries the kernel's name, the program id and the kernel
line that caused it, so that the learner can go straight to the bug.
"""


class TritonError(Exception):
    """As `triton.TritonError`: the base of every error Triton raises (compile errors, errors of
    a kernel while it runs, out of resources)."""


class InterpreterError(TritonError):
    """As `triton.runtime.errors.InterpreterError`: a kernel failed while it ran on the
    interpreter. minitriton is one, so all its errors are of this kind."""

    def __init__(self, error_message=None):
        super().__init__(error_message)
        self.error_message = error_message

    def __str__(self):
        return self.error_message or ""


class OutOfResources(TritonError):
    """As `triton.runtime.errors.OutOfResources`; the simulator never raises it."""

    def __init__(self, required=0, limit=0, name="shared memory"):
        self.required, self.limit, self.name = required, limit, name
        super().__init__(f"out of resource: {name}, Required: {required}, "
                         f"Hardware limit: {limit}")


class PTXASError(TritonError):
    """As `triton.runtime.errors.PTXASError`; minitriton runs no ptxas."""


class AutotunerError(TritonError):
    """As `triton.runtime.errors.AutotunerError`."""


class MiniTritonError(InterpreterError):
    """Base class of every error minitriton raises on purpose."""

    def __init__(self, message):
        super().__init__(message)
        self.message = message
        self.error_message = message
        self.kernel = None
        self.pid = None
        self.location = None

    def __str__(self):
        return self.message

    def _locate(self, kernel, pid, location):
        """Attach where the error happened; called once by the launcher."""
        if self.location is not None:
            return
        if self.__cause__ is None and isinstance(self, CompilationError):
            # Triton's code generator raises the language's error from inside a
            # CompilationError, and programs read it there (`e.__cause__`)
            self.__cause__ = self._cause_type()(self.message)
        self.kernel, self.pid, self.location = kernel, pid, location
        where = f"in kernel `{kernel}`"
        if pid is not None:
            where += f", program {pid}"
        if location is not None:
            filename, lineno, src = location
            where += f", at {filename}:{lineno}:\n    {src.strip()}"
        self.message = f"{where}\n{self.message}"
        self.error_message = self.message
        self.args = (self.message,)

    def _cause_type(self):
        """The Python error type this error also is (TypeError, ValueError...), else
        ValueError: the type of the error Triton's language raises for it."""
        for base in type(self).__mro__:
            if not issubclass(base, TritonError) and issubclass(base, Exception) \
                    and base is not Exception:
                return base
        return ValueError


class CompilationError(MiniTritonError):
    """What Triton would reject when compiling the kernel (types, shapes, constexpr rules)."""


class OutOfBoundsError(MiniTritonError, IndexError):
    """A load, store or atomic touched memory outside the buffer its pointer came from."""


class DeviceAssertionError(MiniTritonError, AssertionError):
    """`tl.device_assert` or a Python `assert` in a kernel failed."""


class GPUFaultError(MiniTritonError):
    """Something the simulator could run but that stops the kernel on a real GPU (the hardware
    or Triton's code for it faults there): minitriton refuses it instead of hiding the bug."""


class LaunchError(MiniTritonError, TypeError):
    """The launch itself is wrong: argument count, types, grid, devices."""


class DeadlockError(MiniTritonError):
    """A program spins forever on a lock (atomic_cas) that no other program can release, or
    waits on a Gluon mbarrier phase that nothing completes."""


class SanitizerError(MiniTritonError):
    """A sanitizer found a bug that does not crash but gives wrong or undefined results."""


class RaceError(SanitizerError):
    """Two programs of one launch touched an address, at least one writing, without atomics."""


class OrderError(SanitizerError):
    """The launch's results depend on the order in which its programs run."""


class AsyncRaceError(SanitizerError):
    """A Gluon program read shared memory an asynchronous copy may still be writing: it did not
    wait on the copy's mbarrier first."""


class UninitializedReadError(SanitizerError):
    """A program loaded an element of a poisoned output that no program had written."""


class PaddingError(SanitizerError):
    """Masked-out lanes reached a reduction or a dot with a value that changes the result."""


def missing(module, name):
    """The AttributeError for a name of Triton's API that minitriton does not have (yet)."""
    if name.startswith("__"):
        return AttributeError(f"module {module!r} has no attribute {name!r}")
    return AttributeError(
        f"{module}.{name} is not in minitriton (yet): docs/limitations.md lists what is "
        f"supported and what is not. If it exists in Triton, the kernel runs on a GPU or under "
        f"TRITON_INTERPRET=1; a report of what you needed is welcome")


class OutsideViewWarning(UserWarning):
    """An access outside the view an argument was passed as, inside its storage: legal on a
    GPU (it reads or writes the storage there), often a bug (Settings.view_bounds makes it an
    OutOfBoundsError)."""


class PartialWriteWarning(UserWarning):
    """A launch stored to an argument but left some elements of it unwritten
    (Settings.coverage)."""
