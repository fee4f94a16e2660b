import { createClient, requestInput, runTaskLoop, startAgent } from "@intentmesh/sdk";

const client = createClient({ baseUrl: process.env.INTENTMESH_URL!, apiKey: process.env.INTENTMESH_API_KEY });
const agent = await startAgent(client, { agentId: "writer-1" });

// Claim each ready task of the intent, ask a human before acting, complete it with the answer.
const done = await runTaskLoop(agent.client, {
  intentId: process.env.INTENT_ID!,
  until: "idle",
  draining: agent.draining,
  handler: async (task, { client, intentId }) => {
    const answer = await requestInput(client, intentId, {
      question: `Publish "${task.title}" now?`,
      responseType: "confirm",
      timeoutSeconds: 3600,
    });
    return { published: answer.value === "yes" };
  },
});
console.log(`completed ${done.completed} task(s)`);
await agent.stop({ deregister: true });
