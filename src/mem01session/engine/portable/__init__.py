"""Memory that moves: a user's durable memory as a document (:mod:`.document`), read out
(:mod:`.export`), written back (:mod:`.restore`), and made from mem0's memories
(:mod:`.mem0`)."""
