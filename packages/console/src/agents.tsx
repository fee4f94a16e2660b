import { useEffect, useState } from "preact/hooks";
import type { ResponseOf } from "@intentmesh/sdk";
import { may, type Session } from "./session";
import { reportError, reportOk } from "./health";
import { ago, useNow } from "./util";

type Agent = ResponseOf<"agentsList">["agents"][number];
const SHOWN = "active,unhealthy,dead,draining";

/** The registry: health, last heartbeat, load against capacity; drain (coordinators and admins). */
export function Agents({ session }: { session: Session }) {
  const [agents, setAgents] = useState<Agent[] | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [refused, setRefused] = useState<string | null>(null);
  const now = useNow(5000);
  // The registry lets coordinators and admins list it and manage any agent; whoever it lets list
  // (and whose roles admit the status route) is offered the drain. The server decides either way.
  const canDrain = may(session, "agentsChangeStatus");

  const load = async () => {
    try {
      const list = await session.client.ops.agentsList({ query: { status: SHOWN, limit: 1000 } });
      setAgents(list.agents);
      reportOk();
    } catch (error) {
      // The registry's list is for coordinators and admins: an operator's key reads why, not an error.
      if ((error as { status?: number }).status === 403) setRefused((error as Error).message);
      else reportError(error);
    }
  };
  useEffect(() => {
    void load();
    const timer = setInterval(load, 5000);
    return () => clearInterval(timer);
  }, [session]);

  const drain = async (agent: Agent) => {
    if (!confirm(`Drain ${agent.agent_id}? It finishes its tasks and takes no new ones.`)) return;
    setBusy(agent.agent_id);
    try {
      const current = await session.client.ops.agentsGet({ agent_id: agent.agent_id });
      await session.client.ops.agentsChangeStatus({ agent_id: agent.agent_id, ifMatch: current.version, body: { status: "draining", reason: `drained from the console by ${session.principal}` } });
      await load();
    } catch (error) {
      reportError(error);
    } finally {
      setBusy(null);
    }
  };

  return (
    <section aria-labelledby="agents-title">
      <h1 id="agents-title">Agents</h1>
      {refused ? (
        <p class="empty">Your key may not list the agent registry: {refused}.</p>
      ) : agents === null ? (
        <p aria-busy="true">Loading…</p>
      ) : agents.length === 0 ? (
        <p class="empty">No agent is registered.</p>
      ) : (
        <table class="list">
          <thead>
            <tr>
              <th scope="col">Agent</th>
              <th scope="col">Health</th>
              <th scope="col">Last heartbeat</th>
              <th scope="col">Load / capacity</th>
              <th scope="col">Capabilities</th>
              {canDrain && <th scope="col">Action</th>}
            </tr>
          </thead>
          <tbody>
            {agents.map((agent) => (
              <tr key={agent.agent_id}>
                <td>
                  {agent.agent_id}
                  {agent.name && <span class="muted"> ({agent.name})</span>}
                </td>
                <td>
                  <span class={`status ${agent.status}`}>{agent.status}</span>
                </td>
                <td>{ago(agent.last_heartbeat_at, now)}</td>
                <td>
                  {agent.capacity.current_load} / {agent.capacity.max_concurrent_tasks ?? "∞"}
                </td>
                <td>{agent.capabilities.join(", ") || "—"}</td>
                {canDrain && (
                  <td>
                    {agent.status === "active" || agent.status === "unhealthy" ? (
                      <button disabled={busy === agent.agent_id} onClick={() => drain(agent)} aria-label={`Drain ${agent.agent_id}`}>
                        Drain
                      </button>
                    ) : (
                      "—"
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
