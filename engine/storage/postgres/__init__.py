"""The PostgreSQL backend: asyncpg + pgvector (see connection.py for why asyncpg)."""
