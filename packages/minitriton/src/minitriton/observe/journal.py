"""Undo for observers that keep shadow state (the sanitizers): a journal of their changes since
a mark, kept while the lockstep executor may have to re-run programs."""
from __future__ import annotations


class Journal:
    """Mixin for an `Observer`: `set` changes shadow state, undoably."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.journal: list = []

    def set(self, target, key, value):
        if self.ctx.memory.journaling:
            old = target.get(key, _MISSING) if isinstance(target, dict) else target[key].copy()
            self.journal.append((target, key, old))
        target[key] = value

    def mark(self):
        return len(self.journal)

    def undo(self, token):
        while len(self.journal) > token:
            target, key, old = self.journal.pop()
            if old is _MISSING:
                del target[key]
            else:
                target[key] = old

    def commit(self, token):
        del self.journal[token:]


_MISSING = object()
