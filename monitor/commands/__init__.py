"""One module per `agent-monitor` subcommand."""
