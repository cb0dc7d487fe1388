"""Observers of a launch: traffic counting, the sanitizers, the unique footprint.

Each module defines one `minitriton.context.Observer` subclass, named by the `Settings` field
that turns it on; importing this package registers every module in it, so a new check is one
new module here and one `Settings` field.
"""
from __future__ import annotations

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    importlib.import_module(f"{__name__}.{_module.name}")
