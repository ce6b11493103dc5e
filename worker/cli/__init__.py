"""The ``contract-gate`` command line: entry point :mod:`.main`, one module per command in
:mod:`.commands` (registered in ``COMMANDS``).

Shared argument helpers are in :mod:`.args`; command modules import them, never :mod:`.main`.
The demo's steps (:mod:`.demo`) and data (:mod:`.scenario`) are helpers of ``demo``.
"""
