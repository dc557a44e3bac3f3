"""Word counts per user (``belief_terms``, ``episode_terms``): what recall's word rarity
rests on, kept in step with the statements and passages entering and leaving recall.

Each statement comes in two forms: for one user (``user_id = :u``: on a cluster
distributed by ``user_id`` it goes to that user's shard alone) and for several users at
once (``(user, text)`` pairs: one statement for a group of turns, :mod:`.group`).
"""

from __future__ import annotations

from typing import Literal

Table = Literal["belief_terms", "episode_terms"]
_COLUMN = {"belief_terms": "beliefs", "episode_terms": "episodes"}

# Lexemes as the full-text column makes them, counted once per statement.
_LEXEMES = (
    "SELECT l.lexeme, count(*) AS n FROM unnest(CAST(:texts AS text[])) AS t(body), "
    "unnest(tsvector_to_array(to_tsvector('english', t.body))) AS l(lexeme) GROUP BY l.lexeme"
)
_LEXEMES_OF_USERS = (
    "SELECT t.u AS user_id, l.lexeme, count(*) AS n "
    "FROM unnest(CAST(:users AS text[]), CAST(:texts AS text[])) AS t(u, body), "
    "unnest(tsvector_to_array(to_tsvector('english', t.body))) AS l(lexeme) "
    "GROUP BY t.u, l.lexeme"
)


def count_up(table: Table) -> str:
    """Add the words of ``:texts`` to user ``:u``'s counts."""
    col = _COLUMN[table]
    return (
        f"INSERT INTO {table} (user_id, lexeme, {col}) SELECT :u, c.lexeme, c.n "
        f"FROM ({_LEXEMES}) c ON CONFLICT (user_id, lexeme) "
        f"DO UPDATE SET {col} = {table}.{col} + EXCLUDED.{col}"
    )


def count_down(table: Table) -> str:
    """Take the words of ``:texts`` out of user ``:u``'s counts."""
    col = _COLUMN[table]
    return (
        f"UPDATE {table} b SET {col} = greatest(0, b.{col} - c.n) FROM ({_LEXEMES}) c "
        "WHERE b.user_id = :u AND b.lexeme = c.lexeme"
    )


def count_up_many(table: Table) -> str:
    """Add the words of each ``:texts[i]`` to user ``:users[i]``'s counts."""
    col = _COLUMN[table]
    return (
        f"INSERT INTO {table} (user_id, lexeme, {col}) SELECT c.user_id, c.lexeme, c.n "
        f"FROM ({_LEXEMES_OF_USERS}) c ON CONFLICT (user_id, lexeme) "
        f"DO UPDATE SET {col} = {table}.{col} + EXCLUDED.{col}"
    )


def count_down_many(table: Table) -> str:
    """Take the words of each ``:texts[i]`` out of user ``:users[i]``'s counts."""
    col = _COLUMN[table]
    return (
        f"UPDATE {table} b SET {col} = greatest(0, b.{col} - c.n) "
        f"FROM ({_LEXEMES_OF_USERS}) c WHERE b.user_id = c.user_id AND b.lexeme = c.lexeme"
    )
