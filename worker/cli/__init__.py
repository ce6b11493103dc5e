"""The ``contract-gate`` command line: one module per command group (entry point :mod:`.main`).

Shared argument helpers are in :mod:`.args`; command modules import them, never :mod:`.main`.
"""
