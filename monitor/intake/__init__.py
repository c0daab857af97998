"""The intake log (write-ahead log): accepted export requests on local disk before they are answered, replayed at
start until every trace in them is evaluated and stored. records.py: the record and segment format; writer.py: the
thread that writes and syncs; log.py: the loop side (segments, the traces each holds, release); consumer.py: the
receivers' consumer that logs; replay.py: the start-up replay; from_config.py: the daemon's wiring.

The public module is the one `__all__` names; the rest are internal to the package. Importing the package imports
none of its modules.
"""

__all__ = ["from_config"]
