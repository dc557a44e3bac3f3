"""Secrets: kept out of what the library shows and stores.

* :mod:`.redaction`: the library's own secrets (database passwords, API keys) masked in
  reprs, logs and errors;
* :mod:`.rules` and :mod:`.scan`: secrets said in a conversation (card numbers with their
  expiry and code, keys, tokens, passwords in the languages `rules` knows) found in linear time, and
  :func:`.scan.redact_secrets`, which every stored turn and op goes through.

The submodules are imported one by one: the scan compiles its patterns when imported (a
tenth of a second), which a process that only masks its own secrets does not pay.
"""
