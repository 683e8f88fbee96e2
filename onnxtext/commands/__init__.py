"""CLI subcommands, one module each (see onnxtext/cli.py for the contract)."""
