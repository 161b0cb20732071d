"""Schedules as data: what each pipeline rank does, step by step, with no devices involved.

A schedule is a table ``rank -> [action | None]`` in torch's IR (``"0F1"``, ``"2B0"``,
``"1SEND_F3"``). This subpackage builds, checks and transforms tables; it never runs anything:

- ``ir``        the action vocabulary (``_Action``, computation types) and the grid printer;
- ``csv_io``    torch's CSV format (custom schedules in, any table out);
- ``orders/``   the generators of every torch schedule (GPipe, 1F1B, interleaved, V shapes);
- ``validate``  the structural rules every executable table obeys;
- ``simulate``  a lock-step replay that finds deadlocks and reports idle steps;
- ``lowering``  adds SEND/RECV (and torch's REDUCE_GRAD/UNSHARD/RESHARD) to a compute-only
  table: the table the runtime executes.
"""
