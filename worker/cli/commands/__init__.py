"""The ``contract-gate`` commands, one module per top-level command."""
