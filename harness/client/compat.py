"""Which HTTP library the installed openai SDK is built on, imported in one place.

openai 2.x is built on ``httpx`` / ``httpcore``; openai 3.x on ``httpx2`` / ``httpcore2``,
a fork with the same structure (same transport classes, same ``network_stream``
response extension, same exception names). Every module of the reference client
imports the HTTP library as ``from harness.client.compat import httpx`` so that the
``http_client`` it hands the SDK is the class the SDK checks for.

This module is not a shim over API differences: there are none we rely on.
"""

from __future__ import annotations

import importlib
from types import ModuleType

import openai

__all__ = ["HTTP_LIBRARY", "OPENAI_MAJOR", "httpx", "openai"]

OPENAI_MAJOR: int = int(openai.__version__.split(".", 1)[0])

#: "httpx2" for openai >= 3, else "httpx".
HTTP_LIBRARY: str = "httpx2" if OPENAI_MAJOR >= 3 else "httpx"

httpx: ModuleType = importlib.import_module(HTTP_LIBRARY)
