"""The ACP door: ``oma-host acp`` serves the host's agents as an ACP agent
(Agent Client Protocol, version 1, newline-delimited JSON on stdio) to ACP
editors such as Zed, the JetBrains IDEs, Neovim, Emacs and ``acpx``.

It sits beside the JSON-RPC door (``oma_host.server``), on the same core,
store and agents, and imports neither that door nor the command line:

- :mod:`.serve`: the entry point the ``acp`` subcommand calls: the agents
  read once (:mod:`.agents`), ``initialize`` answered from that reading
  (:mod:`.handshake`, :mod:`.auth`), then the configs checked and the rest
  served (:mod:`.lazy_door`);
- :mod:`.content`: ACP content blocks to the core's blocks, and stored turns
  back to ACP updates for ``session/load``;
- :mod:`.updates`: a turn's events to ``session/update`` notifications,
  and its result to a stop reason;
- :mod:`.sessions`: the door's sessions (agent, model, cwd) and their storage;
- :mod:`.door`: the ACP ``Agent`` itself, one method per ACP request;
- :mod:`.routes`: the ACP methods, each request's params validated with the
  schema's models (a plain text prompt by a shape test) and passed to the door;
- :mod:`.wire`: the JSON-RPC on stdio (newline-delimited), ours rather than
  the ``agent-client-protocol`` library's connection (a prompt turn is the
  hot path; the library's schema models still define and check the messages);
- :mod:`.editor`: what the door sends the editor (updates, permission and
  file requests).

Nothing here is imported by the JSON-RPC door, so its cold start is unchanged.
"""
