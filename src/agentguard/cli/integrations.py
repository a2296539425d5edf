"""Commands of the integrations (registered by :mod:`agentguard.cli`).

- ``agentguard check-config agentguard.toml``: validate a configuration and list its guards.
- ``agentguard mcp-proxy --guards agentguard.toml --upstream NAME=COMMAND ...``: serve the MCP guard
  proxy over stdio (or Streamable HTTP with ``--http 127.0.0.1:8765``: it prints its URL, path ``/mcp``);
  ``--strategy CRP+TEH`` sets the enforcement strategy.
- ``agentguard litellm-guardrail --guards agentguard.toml --port 8766``: serve LiteLLM's generic
  guardrail endpoint (``POST /beta/litellm_basic_guardrail_api``); ``--answers`` decides each response text
  with the stack too, as the model's answer on the request's run (LiteLLM mode ``[pre_call, post_call]``).

``--guards`` names the guard-stack file; ``--config``/``-c`` is kept as an alias. Prefer ``--guards``
behind the MCP Inspector, whose own ``--config`` option would otherwise take the proxy's argument.
"""

from __future__ import annotations

import os

from typing import Any, List, Optional

import typer

__all__ = ["register"]


def _stack_and_recorder(config: str, record: Optional[str], state: Optional[str] = None, shadow: bool = False):
    """The stack, the recorder (``--record`` or the file's ``[recording] path``) and the state function
    (``--state`` or the file's ``[recording] state``: ``history`` or ``package.module:attr``); ``shadow``
    (``--shadow``) makes the whole stack observe only."""
    from ..core.shadow import Shadowed
    from ..integrations.recording import load_recording

    stack, recorder, state_fn = load_recording(config, record=record, state=state)
    if shadow:
        stack = Shadowed(None, [stack], name=stack.name, on_error=stack.on_error)
    return stack, recorder, state_fn


STATE_HELP = ("the state recorded with each step and given to the guards: 'history' (the call history: tools "
              "called, arguments, result labels) or 'package.module:attr' (a function (context, call) -> "
              "state); default: the guard file's [recording] state")


def _read_token(token_file: Optional[str]) -> str:
    """The endpoint's token: the file's content, else ``$AGENTGUARD_TOKEN``; InputError when neither."""
    import os

    from ..core.errors import InputError

    if token_file:
        try:
            with open(token_file, encoding="utf-8") as fh:
                token = fh.read().strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the token file {token_file}: {exc}") from None
    else:
        token = os.environ.get("AGENTGUARD_TOKEN", "").strip()
    if not token:
        raise InputError("no bearer token: set AGENTGUARD_TOKEN or pass --token-file (LiteLLM sends it "
                         "as api_key in the guardrail's litellm_params)")
    return token


def _host_port(spec: str) -> tuple[str, int]:
    from ..core.errors import InputError

    host, _, port = spec.rpartition(":")
    try:
        number = int(port)
    except ValueError:
        raise InputError(f"bad address {spec!r}: expected HOST:PORT") from None
    if not 0 <= number <= 65535:
        raise InputError(f"bad address {spec!r}: the port must be in 0..65535")
    return host or "127.0.0.1", number


def _relay(stack: Any, recorder: Any, upstream: Any, strategy: Optional[str], state_fn: Any = None) -> None:
    """Serve the MCP stdio relay (agentguard.integrations.mcp.relay) in front of one started upstream."""
    import asyncio

    from ..integrations.mcp.relay import serve_stdio_relay

    from ..core.errors import InputError

    ended = False
    try:
        ended = asyncio.run(serve_stdio_relay(stack, upstream.process, strategy=strategy, recorder=recorder,
                                              state_fn=state_fn))
    except (asyncio.CancelledError, KeyboardInterrupt):  # SIGTERM / Ctrl-C: the upstream is stopped already
        pass
    finally:
        if recorder is not None:
            recorder.finish_all()
    if ended:  # it closed its output while the client was still there: not a clean end (exit 0 was silent)
        raise InputError(f"upstream {upstream.name!r} ended the session (exit status {upstream.process.poll()}) "
                         "while the client was still connected: is it an MCP server on stdio?")


def _sdk_proxy(stack: Any, recorder: Any, ups: list, *, http: Optional[str], prefix: Optional[bool],
               strategy: Optional[str], state_fn: Any = None) -> None:
    """Serve the MCP SDK server (agentguard.integrations.mcp.proxy.GuardProxy) over stdio or Streamable HTTP."""
    import anyio

    from ..integrations.mcp.proxy import GuardProxy
    from ..integrations.mcp.strict import hardened_http_app

    async def main() -> None:
        async with GuardProxy(stack, ups, recorder=recorder, prefix=prefix, strategy=strategy,
                              state_fn=state_fn) as proxy:
            if http is None:
                await proxy.serve_stdio()
            else:
                import uvicorn

                host, port = _host_port(http)
                # AGENTGUARD_TOKEN (when set) is the bearer token clients must send over HTTP
                app_ = hardened_http_app(proxy.server.streamable_http_app(host=host),
                                         token=os.environ.pop("AGENTGUARD_TOKEN", None) or None)
                server = uvicorn.Server(uvicorn.Config(app_, host=host, port=port, log_level="warning"))
                typer.echo(f"agentguard MCP proxy on http://{host}:{port}/mcp (Streamable HTTP)", err=True)
                await server.serve()

    anyio.run(main)


def register(app: typer.Typer, bench: typer.Typer) -> None:
    """Add this mechanism's commands to the main app and to the `bench` group."""

    @app.command("check-config")
    def check_config(path: str = typer.Argument(..., help="agentguard.toml or a .yaml file")) -> None:
        """Validate a guard-stack configuration and build it (imports each guard's class)."""
        from ..config import build_stack, load_config

        cfg = load_config(path)
        stack = build_stack(cfg)
        typer.echo(
            f"ok: {path}: {len(stack.guards)} guard(s), on_error={stack.on_error.name.lower()}"
            + (f", recording to {cfg.recording_path}" if cfg.recording_path else "")
        )
        for spec, g in zip(cfg.guards, stack.guards):
            typer.echo(f"  {g.name}  ({spec.type})")

    @app.command("mcp-proxy")
    def mcp_proxy(
        config: str = typer.Option(
            ..., "--guards", "--config", "-c", help="agentguard.toml describing the guard stack (--config: alias)"
        ),
        upstream: List[str] = typer.Option(
            ...,
            "--upstream",
            "-u",
            help="NAME=COMMAND [ARGS...] (stdio) or NAME=URL (streamable HTTP); repeatable",
        ),
        http: Optional[str] = typer.Option(
            None, "--http", help="serve Streamable HTTP on HOST:PORT instead of stdio"
        ),
        record: Optional[str] = typer.Option(None, "--record", help="append traces to this JSONL file"),
        state: Optional[str] = typer.Option(None, "--state", help=STATE_HELP),
        prefix: Optional[bool] = typer.Option(
            None,
            "--prefix/--no-prefix",
            help="prefix tool names with the upstream name (default: when >1 upstream)",
        ),
        strategy: Optional[str] = typer.Option(
            None, "--strategy",
            help="enforcement strategy for refused calls: TT, AB, TEH, CRP, CRP+TEH, CRP+AB, CRP+TT, stop, block, "
                 "halt-tool, fallback, reflect, default (default: each guard's own, e.g. a policy's strategy)",
        ),
        shadow: bool = typer.Option(False, "--shadow", help="observe only: every call runs, would-be refusals "
                                    "are recorded (agentguard report shadow)"),
    ) -> None:
        """Serve an MCP proxy that gates every tools/call of the upstream servers with the guard stack."""
        from ..integrations.mcp.upstream import parse_upstream

        if strategy is not None:  # a bad name fails before any upstream starts
            from ..core.strategies import strategy as strategy_by_name

            strategy_by_name(strategy)
        if http is not None:  # so does a bad address
            _host_port(http)
        ups = [parse_upstream(u) for u in upstream]
        for u in ups:  # start the servers first: their start-up overlaps ours (imports, the stack)
            u.spawn()
        try:
            stack, recorder, state_fn = _stack_and_recorder(config, record, state, shadow)
        except BaseException:
            for u in ups:
                if u.process is not None:
                    u.process.kill()
            raise
        if http is None and len(ups) == 1 and ups[0].process is not None and not prefix:
            _relay(stack, recorder, ups[0], strategy, state_fn)  # the fast path: one stdio upstream over stdio
        else:
            _sdk_proxy(stack, recorder, ups, http=http, prefix=prefix, strategy=strategy, state_fn=state_fn)

    @app.command("litellm-guardrail")
    def litellm_guardrail(
        config: str = typer.Option(
            ..., "--guards", "--config", "-c", help="agentguard.toml describing the guard stack (--config: alias)"
        ),
        host: str = typer.Option("127.0.0.1", help="address to listen on"),
        port: int = typer.Option(8766, min=0, max=65535, help="port to listen on (0: any free port)"),
        record: Optional[str] = typer.Option(None, "--record", help="append traces to this JSONL file"),
        state: Optional[str] = typer.Option(None, "--state", help=STATE_HELP),
        token_file: Optional[str] = typer.Option(
            None, "--token-file", help="file holding the bearer token (default: $AGENTGUARD_TOKEN)"
        ),
        max_body: int = typer.Option(1 << 20, min=1, help="largest request body in bytes (413 above)"),
        max_concurrency: int = typer.Option(32, min=1, help="requests checked at once (503 beyond)"),
        answers: bool = typer.Option(False, "--answers", help="also decide each response text with the stack, "
                                     "on the request's run (the model's answer; LiteLLM mode [pre_call, post_call])"),
    ) -> None:
        """Serve LiteLLM's generic guardrail API (POST /beta/litellm_basic_guardrail_api) for the stack.
        Requests need ``Authorization: Bearer <token>`` (AGENTGUARD_TOKEN or --token-file), like the service."""
        from ..integrations.litellm import GuardrailEndpoint, serve

        token = _read_token(token_file)
        stack, recorder, state_fn = _stack_and_recorder(config, record, state)
        endpoint = GuardrailEndpoint(stack, recorder=recorder, state_fn=state_fn,
                                     answer_guard=stack if answers else None)
        server = serve(endpoint, host, port, token=token, max_body=max_body, max_concurrency=max_concurrency)
        typer.echo(
            f"agentguard LiteLLM guardrail on http://{host}:{server.server_address[1]}"
            "/beta/litellm_basic_guardrail_api",
            err=True,
        )
        import signal

        def _stop(signum: int, frame: object) -> None:
            raise KeyboardInterrupt

        signal.signal(signal.SIGTERM, _stop)  # a service manager's stop still writes the open traces
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
            if recorder is not None:
                recorder.finish_all()
