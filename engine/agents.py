"""Which agent names a database login may propose under (issue 28: the database holds the agent to
its name).

Review policies trust agents by name: a policy's `--agents bot-a` approves, in its slots, what a
candidate with no extraction run and `created_by = 'bot-a'` says. On PostgreSQL the agent role may
INSERT candidates, so the name must not be whatever the agent writes: schema migration 10's trigger
refuses a proposal whose `created_by` its login may not use. A login may use its own name (one MCP
server login serving one agent of the same name needs no set-up) and every name the owner mapped
to it here (`memdesk agents allow DB LOGIN AGENT`: a login named `mcp_eu` serving `support-bot`, or
several agents behind one login). The owner, and a login that may write facts itself (a reviewer:
it could approve anything directly), are not bound.

SQLite has no logins: whoever opens the file is the owner and can write any row, so there is no
check there and these calls say so (a check that anyone can skip would only pretend).
"""

from __future__ import annotations

from .context import EngineContext
from .errors import AgentIdentityError, UserInputError
from .gate import POLICY_ACTOR_PREFIX
from .models import AgentLogin
from .text import has_visible_text
from .timeutil import to_us


def _name(value: str, what: str) -> str:
    name = value.strip()
    if not has_visible_text(name):
        raise UserInputError(f"the {what} is empty")
    if name != value or any(ch.isspace() or not ch.isprintable() for ch in name):
        raise UserInputError(f"the {what} {value!r} holds spaces or invisible characters")
    return name


class AgentLoginService:
    """The owner's map of logins to agent names (PostgreSQL), and the check `Memory.propose` and
    `Memory.request_forget` make before they queue anything."""

    def __init__(self, ctx: EngineContext) -> None:
        self.ctx = ctx

    async def check(self, agent: str) -> None:
        """Refuse (AgentIdentityError, nothing changed) a proposal under a name this store's login
        may not use. The database's trigger refuses the row too; asking first gives the message
        before any other work (a credential's refusal row names its actor, too)."""
        refusal = await self.ctx.store.agent_refusal(agent)
        if refusal is not None:
            raise AgentIdentityError(refusal)

    async def allow(self, login: str, agent: str, actor: str) -> bool:
        """Let `login` propose as `agent` (owner only; audited `agent_allow`). False: it already
        could."""
        agent = self._agent(agent)
        return await self.ctx.store.set_agent_login(
            _name(login, "login"), agent, allow=True, actor=actor, at=to_us(self.ctx.now())
        )

    async def revoke(self, login: str, agent: str, actor: str) -> bool:
        """Stop `login` proposing as `agent` (owner only; audited `agent_revoke`). False: it was not
        allowed. A login's own name cannot be revoked here: rename or drop the login."""
        return await self.ctx.store.set_agent_login(
            _name(login, "login"), _name(agent, "agent name"), allow=False, actor=actor, at=to_us(self.ctx.now())
        )

    async def list(self) -> list[AgentLogin]:
        """The map, by login then agent (owner only)."""
        return await self.ctx.store.agent_logins()

    @staticmethod
    def _agent(agent: str) -> str:
        name = _name(agent, "agent name")
        if name.startswith(POLICY_ACTOR_PREFIX):
            raise UserInputError(f"{name!r} is a review policy's name ({POLICY_ACTOR_PREFIX}NAME), not an agent's")
        return name
