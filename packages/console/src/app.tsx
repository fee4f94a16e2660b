import { useEffect, useState } from "preact/hooks";
import { describe, signIn, signOut, storedKey, type Session } from "./session";
import { dismissFailure, useHealth } from "./health";
import { inbox, useInbox } from "./inbox-store";
import { Inbox } from "./inbox";
import { Intents } from "./intents";
import { IntentPage } from "./intent";
import { Agents } from "./agents";

type Route = { page: "inbox" } | { page: "intents" } | { page: "intent"; id: string } | { page: "agents" };

/** The console routes by the URL's fragment (#/inbox, #/intents/<id>): the gateway serves one page. */
function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, "").split("/");
  if (parts[0] === "intents" && parts[1]) return { page: "intent", id: decodeURIComponent(parts[1]) };
  if (parts[0] === "intents") return { page: "intents" };
  if (parts[0] === "agents") return { page: "agents" };
  return { page: "inbox" };
}

function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", onChange);
    // Effects run after the first paint: a fragment that changed between that render and this
    // listener (a link followed at once, a bookmark opened while signing in) is read here.
    onChange();
    return () => removeEventListener("hashchange", onChange);
  }, []);
  return route;
}

const THEME_KEY = "intentmesh.console.theme";
function useTheme(): [string, () => void] {
  const [theme, setTheme] = useState(() => localStorage.getItem(THEME_KEY) ?? (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light"));
  useEffect(() => {
    document.documentElement.dataset.theme = theme;
  }, [theme]);
  return [
    theme,
    () => {
      const next = theme === "dark" ? "light" : "dark";
      localStorage.setItem(THEME_KEY, next);
      setTheme(next);
    },
  ];
}

export function App() {
  const [session, setSession] = useState<Session | null>(null);
  const [restoring, setRestoring] = useState(() => storedKey() !== null);
  const [theme, toggleTheme] = useTheme();

  useEffect(() => {
    const key = storedKey();
    if (!key) return;
    signIn(key)
      .then(setSession)
      .catch(() => signOut())
      .finally(() => setRestoring(false));
  }, []);
  useEffect(() => {
    if (session) inbox.start(session.client);
    return () => inbox.stop();
  }, [session]);

  const themeButton = (
    <button class="ghost" onClick={toggleTheme} aria-label={theme === "dark" ? "Switch to light mode" : "Switch to dark mode"} aria-pressed={theme === "dark"}>
      {theme === "dark" ? "☀" : "☾"}
    </button>
  );
  if (restoring) return <p aria-busy="true">Signing in…</p>;
  if (!session) return <SignIn onSession={setSession} themeButton={themeButton} />;
  return (
    <Shell
      session={session}
      themeButton={themeButton}
      onSignOut={() => {
        signOut();
        setSession(null);
      }}
    />
  );
}

function SignIn({ onSession, themeButton }: { onSession: (session: Session) => void; themeButton: preact.JSX.Element }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: Event) => {
    event.preventDefault();
    setBusy(true);
    setError(null);
    try {
      onSession(await signIn(key.trim()));
    } catch (failure) {
      setError(describe(failure));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <div class="topright">{themeButton}</div>
      <form onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">intentmesh console</h1>
        <label for="api-key">API key</label>
        <input id="api-key" name="api-key" type="password" autoComplete="off" required value={key} onInput={(e) => setKey((e.target as HTMLInputElement).value)} aria-describedby="key-note" />
        <p id="key-note" class="hint">
          Kept in this tab's session storage only, sent as X-API-Key to this server.
        </p>
        {error && (
          <p class="field-error" role="alert">
            {error}
          </p>
        )}
        <button class="primary" type="submit" disabled={busy || !key.trim()}>
          Sign in
        </button>
      </form>
    </main>
  );
}

function Shell({ session, themeButton, onSignOut }: { session: Session; themeButton: preact.JSX.Element; onSignOut: () => void }) {
  const route = useRoute();
  const { items } = useInbox();
  const { down, failure } = useHealth();
  useEffect(() => {
    document.title = items.length ? `(${items.length}) intentmesh console` : "intentmesh console";
  }, [items.length]);
  const link = (page: string, label: string, extra?: preact.ComponentChildren) => (
    <a href={`#/${page}`} aria-current={route.page === page || (page === "intents" && route.page === "intent") ? "page" : undefined}>
      {label}
      {extra}
    </a>
  );
  return (
    <>
      <header class="top">
        <nav aria-label="Main">
          <span class="brand">intentmesh</span>
          {link(
            "inbox",
            "Inbox",
            items.length > 0 && (
              <span class="count" aria-label={`${items.length} waiting`}>
                {items.length}
              </span>
            ),
          )}
          {link("intents", "Intents")}
          {link("agents", "Agents")}
        </nav>
        <div class="who">
          <span class="muted">
            {session.principal} ({session.roles.join(", ")})
          </span>
          {themeButton}
          <button class="ghost" onClick={onSignOut}>
            Sign out
          </button>
        </div>
      </header>
      {down !== null && (
        <div class="banner outage" role="alert">
          The server does not answer{down ? ` (${down})` : ""}. The console keeps trying and recovers by itself.
        </div>
      )}
      {failure && (
        <div class="banner error" role="alert">
          {failure}{" "}
          <button class="ghost" onClick={dismissFailure} aria-label="Dismiss the error">
            ✕
          </button>
        </div>
      )}
      <main>
        {route.page === "inbox" && <Inbox session={session} />}
        {route.page === "intents" && <Intents session={session} />}
        {route.page === "intent" && <IntentPage session={session} id={route.id} />}
        {route.page === "agents" && <Agents session={session} />}
      </main>
    </>
  );
}
