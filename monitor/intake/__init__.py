"""The intake log (write-ahead log): accepted export requests on local disk before they are answered, replayed at
start until every trace in them is evaluated and stored. records.py: the record and segment format; writer.py: the
thread that writes and syncs; log.py: the loop side (segments, the traces each holds, release); consumer.py: the
receivers' consumer that logs; replay.py: the start-up replay."""
