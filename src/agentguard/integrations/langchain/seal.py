"""The decided call, checked where LangChain starts a tool (the gate's seal; see the package doc).

The gate decides a call and hands its request to the next tool-call wrapper. A middleware listed after the gate
(inside it) may hand the tool node another request: ``request.override(tool=delete_file, tool_call={..., "name":
"delete_file"})`` ran ``delete_file`` for a call the guard allowed as ``read_file`` (the real ``create_agent``,
session 23). The pinned tool of a decision (:func:`.reading._pinned`) refuses other arguments, but a swapped-in tool
object is not that tool.

So the decision is also checked where any tool starts: while the gate's handler runs, a :class:`Seal` is the
context's callback handler for every LangChain callback manager configured in it (``register_configure_hook``: the
tool node's ``tool.invoke`` configures one, whichever tool object it was handed), and ``BaseTool.run``/``arun``
report ``on_tool_start`` (the tool's name and its arguments, the injected ones filtered out) before the body runs.
The first tool to start must be the decided call (same name, same non-injected arguments) and it starts once;
any other start raises :class:`ToolSwapped` there, so its body never runs and the gate answers with a refusal.
The seal is also put in the callbacks of the tool node's own config for this call (``request.runtime.config``, the
one the tool node hands ``tool.invoke``; :func:`attach`): a middleware that runs the tool node's handler in a thread
it starts without copying the context (a timeout wrapper's ``ThreadPoolExecutor``) does not lose it (session 24:
``delete_file`` swapped in there ran). Once the gate has answered, the seal is closed and stays in that config: a
tool the handler starts later (a thread the middleware left running) is refused at its start. :class:`ToolSwapped` is a ``BaseException``: LangChain's callback manager logs
every ``Exception`` a handler raises as "Error in Seal.on_tool_start callback" before re-raising it, and the tool
node's error handling (``handle_tool_errors``), a retry middleware or any ``except Exception`` between the gate and
the tool would catch it; the gate catches it and the model reads the refusal as the call's error ToolMessage.
Tools the decided tool runs itself (nested, while it runs: their parent run is the decided run or a run inside it,
which the seal follows through every start it is told of) are its own business; a tool started beside it while it
runs (a middleware's thread with the context copied) is not nested (session 24: ``delete_file`` ran that way). Why a callback and not a wrapper
of each tool: the gate never sees the tool objects a middleware may swap in, and every ``BaseTool`` reports its
start to the callbacks of its context.

A start after the gate answered raises :class:`LateStart` (a :class:`ToolSwapped`): nobody waits for that answer,
so the thread it ends (a ``threading.Thread`` the middleware left running) ends quietly: this module chains
``threading.excepthook`` once, at import, so that a ``LateStart`` is logged as one warning line of the
``agentguard`` logger instead of a traceback on stderr (any other exception goes to the hook it replaced); an
asyncio task the middleware left behind (``create_task(handler(request))``) that ends with a refused start nobody
retrieved is one warning line too (a filter on the ``asyncio`` logger drops its "Task exception was never
retrieved" traceback; a caller awaiting the task still receives the refusal). Before
session 25 both ended with a printed ``ToolSwapped`` traceback; the tool's body never ran then either.

Nested means started with a parent run: a tool body calling ``other.invoke(args)`` (or with ``config={}``, or the
``RunnableConfig`` it was given) inherits its run as the parent and runs. A tool body that drops its callbacks
(``other.invoke(args, {"callbacks": []})``, a callback manager of its own) starts a run with no parent: the seal
cannot tell it from a tool started beside the decided call, so it is refused (its body does not run) and the model
reads the decided call as refused, although that call's own body ran up to there. That is the fail-closed answer,
kept on purpose (session 25, the real ``create_agent``).

What it does not cover: a middleware that runs code other than a LangChain tool (a plain function, a subprocess,
a tool's ``func``/``_run`` called directly, which report no start) in place of the tool, or that invokes a tool
itself with its own config in a thread without the context; the gate cannot see that, and such a middleware is the
application's own code.
"""

from __future__ import annotations

import logging
import threading
from contextvars import ContextVar
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler, BaseCallbackManager
from langchain_core.tracers.context import register_configure_hook

from ..common import plain

__all__ = ["LateStart", "SEAL", "Seal", "ToolSwapped", "attach", "caught"]

log = logging.getLogger("agentguard")


class ToolSwapped(BaseException):
    """A tool started in place of the decided call (another tool, other arguments, or a second run). A
    ``BaseException``, so that nothing between the gate and the tool that catches ``Exception`` (LangChain's callback
    error logging, the tool node's ``handle_tool_errors``, a retry middleware) handles it: the gate does."""


class LateStart(ToolSwapped):
    """A tool started under a seal whose gate had answered already (a thread the handler left running): refused at
    its start; a thread it ends ends quietly (:func:`_quiet_late`)."""


_replaced = threading.excepthook


def _quiet_late(args: Any) -> None:
    """``threading.excepthook``: a :class:`LateStart` is logged as one warning line (no traceback: nobody waits for
    that thread's answer, and the tool's body did not run); anything else goes to the hook this one replaced."""
    if isinstance(args.exc_type, type) and issubclass(args.exc_type, LateStart):
        log.warning("agentguard refused a tool start in thread %s: %s", getattr(args.thread, "name", "?"),
                    args.exc_value)
        return
    _replaced(args)


class _QuietTask(logging.Filter):
    """On asyncio's logger: a task that ended with a refused start nobody retrieved (a task the handler left running)
    is one warning line of the ``agentguard`` logger, not asyncio's "Task exception was never retrieved" traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, ToolSwapped):
            log.warning("agentguard refused a tool start in a task nobody awaited: %s", exc)
            return False
        return True


if not any(isinstance(f, _QuietTask) for f in logging.getLogger("asyncio").filters):
    logging.getLogger("asyncio").addFilter(_QuietTask())

if not getattr(threading.excepthook, "_agentguard_quiet_late", False):
    _quiet_late._agentguard_quiet_late = True  # type: ignore[attr-defined]
    threading.excepthook = _quiet_late


class Seal(BaseCallbackHandler):
    """The decided call (tool ``name``, its non-injected ``args``): the one tool start it lets through."""

    raise_error = True  # an exception here stops the tool before its body
    run_inline = True

    def __init__(self, name: str, args: dict[str, Any], injected: frozenset[str] = frozenset()) -> None:
        self.name = name
        self.args = plain({k: v for k, v in args.items() if k not in injected})
        self.started: UUID | None = None
        self.running = False
        self.refused: str | None = None
        self.closed = False  # the gate has answered: no tool starts under this seal any more
        self.inside: set[UUID] = set()  # the decided run and each run started inside it (by its parent run id)

    def _within(self, run_id: UUID, parent_run_id: UUID | None) -> bool:
        """Whether a run starting now is inside the decided run (its parent is); it is then kept as inside too."""
        if self.running and parent_run_id is not None and parent_run_id in self.inside:
            self.inside.add(run_id)
            return True
        return False

    def on_chain_start(self, serialized: Any, inputs: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                       **kwargs: Any) -> None:
        self._within(run_id, parent_run_id)

    def on_llm_start(self, serialized: Any, prompts: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                     **kwargs: Any) -> None:
        self._within(run_id, parent_run_id)

    def on_chat_model_start(self, serialized: Any, messages: Any, *, run_id: UUID,
                            parent_run_id: UUID | None = None, **kwargs: Any) -> None:
        self._within(run_id, parent_run_id)

    def on_retriever_start(self, serialized: Any, query: Any, *, run_id: UUID, parent_run_id: UUID | None = None,
                           **kwargs: Any) -> None:
        self._within(run_id, parent_run_id)

    def on_tool_start(self, serialized: dict[str, Any], input_str: str, *, run_id: UUID,
                      parent_run_id: UUID | None = None, inputs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if self._within(run_id, parent_run_id):  # a tool the decided tool runs itself
            return
        name = (serialized or {}).get("name")
        if self.closed:
            why = f"{name} started after the gate answered the decided call of {self.name} (a run left behind)"
        elif self.running:
            why = f"{name} started beside the decided call of {self.name} while it ran, not inside it"
        elif self.started is not None:
            why = f"{name} started after the decided call of {self.name} ran (a second run nobody decided)"
        elif name != self.name:
            why = f"{name} started in place of the decided call of {self.name} (a tool swapped after the gate)"
        elif not isinstance(inputs, dict) or plain(inputs) != self.args:
            why = f"{self.name} started with other arguments than the decided ones (changed after the gate)"
        else:
            self.started, self.running, self.inside = run_id, True, {run_id}
            return
        self.refused = why
        raise (LateStart if self.closed else ToolSwapped)(f"agentguard: {why}")

    def _ended(self, run_id: UUID) -> None:
        if run_id == self.started:
            self.running = False

    def on_tool_end(self, output: Any, *, run_id: UUID, **kwargs: Any) -> None:
        self._ended(run_id)

    def on_tool_error(self, error: BaseException, *, run_id: UUID, **kwargs: Any) -> None:
        self._ended(run_id)


#: the seal of the call the gate's handler is running in this context (None outside one)
SEAL: ContextVar[Seal | None] = ContextVar("agentguard_langchain_seal", default=None)
register_configure_hook(SEAL, True)


def attach(config: Any, seal: Seal) -> None:
    """Put ``seal`` in the callbacks of the tool node's config for this call (a dict of its own per call: the tool
    node builds one per tool call, and drops it after the call); it stays there, closed once the gate has answered,
    until the gate decides again with that config (a retry listed before the gate): the new seal replaces it. A
    config that is not a dict is left alone (the context's seal still applies)."""
    if not isinstance(config, dict):
        return
    old = config.get("callbacks")
    if isinstance(old, BaseCallbackManager):
        new: Any = old.copy()
        for h in [h for h in new.handlers if isinstance(h, Seal) and h.closed]:
            new.remove_handler(h)  # an earlier decision's seal (a retry listed before the gate decides again)
        new.add_handler(seal, inherit=True)
    else:
        new = [*(h for h in (old if isinstance(old, list) else []) if not (isinstance(h, Seal) and h.closed)), seal]
    config["callbacks"] = new


def caught(seal: Seal, exc: ToolSwapped) -> None:
    """The gate caught ``exc`` while ``seal`` was its decision's: the decided call did not run as decided, whichever
    seal refused the start."""
    if seal.refused is None:
        seal.refused = str(exc).removeprefix("agentguard: ")
