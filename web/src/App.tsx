import { Component, lazy, Suspense, useEffect, useMemo, useState, type FormEvent, type ReactNode } from 'react';
import { NavLink, Route, Routes, useLocation } from 'react-router';
import { Provider as UrqlProvider } from 'urql';
import { createApi, describeError, storedKey, storeKey, useConnectionState } from './api.ts';
import { graphql } from './graphql.ts';
import { ErrorNote, Loading, SessionContext, useSession, type Role, type Session } from './ui.tsx';
import { Overview } from './views/Overview.tsx';
import { Failures } from './views/Failures.tsx';

// The views an on-call engineer opens first load with the page; the rest on demand.
const EventDetail = lazy(() => import('./views/EventDetail.tsx'));
const Redrives = lazy(() => import('./views/Redrives.tsx'));
const RedriveDetail = lazy(() => import('./views/RedriveDetail.tsx'));
const Policies = lazy(() => import('./views/Policies.tsx'));
const Tail = lazy(() => import('./views/Tail.tsx'));
const Groups = lazy(() => import('./views/Groups.tsx'));
const GroupDetail = lazy(() => import('./views/GroupDetail.tsx'));
const Alerts = lazy(() => import('./views/Alerts.tsx'));
const Bridges = lazy(() => import('./views/Bridges.tsx'));
const Targets = lazy(() => import('./views/Targets.tsx'));

const ViewerQuery = graphql(`query Viewer { viewer { name role } }`);

type Gate =
  | { state: 'checking' }
  | { state: 'signed-in'; session: Session }
  | { state: 'needs-key'; problem: string | null }
  | { state: 'failed'; error: unknown };

export function App() {
  const [key, setKey] = useState(storedKey);
  const api = useMemo(() => createApi(key), [key]);
  const [gate, setGate] = useState<Gate>({ state: 'checking' });

  useEffect(() => {
    let cancelled = false;
    setGate({ state: 'checking' });
    api.urql.query(ViewerQuery, {}).toPromise().then((result) => {
      if (cancelled) return;
      if (result.data) {
        setGate({ state: 'signed-in', session: { api, name: result.data.viewer.name, role: result.data.viewer.role as Role } });
      } else if (describeError(result.error).code === 'UNAUTHENTICATED') {
        if (key) storeKey(null);
        setGate({ state: 'needs-key', problem: key ? 'That key was not accepted: check it was copied whole and is still configured in LAZARUS_API_KEYS.' : null });
      } else {
        setGate({ state: 'failed', error: result.error });
      }
    });
    return () => {
      cancelled = true;
    };
  }, [api, key]);

  if (gate.state === 'checking') return <main className="center"><Loading what="Lazarus" /></main>;
  if (gate.state === 'failed') {
    return (
      <main className="center">
        <h1>Lazarus</h1>
        <ErrorNote error={gate.error} />
        <button onClick={() => setKey(storedKey())}>Try again</button>
      </main>
    );
  }
  if (gate.state === 'needs-key') {
    return <SignIn problem={gate.problem} onKey={(k) => { storeKey(k); setKey(k); }} />;
  }
  return (
    <UrqlProvider value={api.urql}>
      <SessionContext.Provider value={gate.session}>
        <Shell onSignOut={key ? () => { storeKey(null); setKey(null); } : undefined} />
      </SessionContext.Provider>
    </UrqlProvider>
  );
}

function SignIn({ problem, onKey }: { problem: string | null; onKey: (key: string) => void }) {
  const [value, setValue] = useState('');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (value.trim()) onKey(value.trim());
  };
  return (
    <main className="center">
      <h1>Lazarus</h1>
      <form onSubmit={submit} className="sign-in">
        <label htmlFor="api-key">API key</label>
        <input id="api-key" type="password" autoComplete="off" value={value} onChange={(e) => setValue(e.target.value)} autoFocus />
        <button type="submit">Sign in</button>
        <p className="muted">The key is kept for this tab only and sent as <code>Authorization: Bearer</code>.</p>
        {problem ? <p role="alert" className="error-note">{problem}</p> : null}
      </form>
    </main>
  );
}

function Shell({ onSignOut }: { onSignOut?: () => void }) {
  const session = useSession();
  const connection = useConnectionState();
  return (
    <>
      <header className="top">
        <span className="brand">Lazarus</span>
        <nav aria-label="Views">
          <NavLink to="/" end>Overview</NavLink>
          <NavLink to="/failures">Failures</NavLink>
          <NavLink to="/groups">Error groups</NavLink>
          <NavLink to="/redrives">Redrives</NavLink>
          <NavLink to="/targets">Targets</NavLink>
          <NavLink to="/policies">Retry policies</NavLink>
          <NavLink to="/alerts">Alerts</NavLink>
          <NavLink to="/bridges">Bridges</NavLink>
          <NavLink to="/tail">Live tail</NavLink>
          <a href="/graphql">GraphiQL</a>
        </nav>
        <span className="who" data-testid="viewer">
          {session.name} · <strong>{session.role.toLowerCase()}</strong>
          {onSignOut ? <button className="link" onClick={onSignOut}>Sign out</button> : null}
        </span>
      </header>
      {connection === 'offline' ? (
        <div role="status" className="banner">Reconnecting to the live feed… changes made meanwhile will be caught up.</div>
      ) : null}
      <main>
        <ViewBoundary key={useLocation().pathname}>
        <Suspense fallback={<Loading what="view" />}>
          <Routes>
            <Route path="/" element={<Overview />} />
            <Route path="/failures" element={<Failures />} />
            <Route path="/failures/:id" element={<EventDetail />} />
            <Route path="/groups" element={<Groups />} />
            <Route path="/groups/:id" element={<GroupDetail />} />
            <Route path="/redrives" element={<Redrives />} />
            <Route path="/redrives/:id" element={<RedriveDetail />} />
            <Route path="/policies" element={<Policies />} />
            <Route path="/alerts" element={<Alerts />} />
            <Route path="/bridges" element={<Bridges />} />
            <Route path="/targets" element={<Targets />} />
            <Route path="/tail" element={<Tail />} />
            <Route path="*" element={<p>No such page. <NavLink to="/">Back to the overview</NavLink></p>} />
          </Routes>
        </Suspense>
        </ViewBoundary>
      </main>
    </>
  );
}

/** A view that fails to render says so in place; the navigation keeps working. */
class ViewBoundary extends Component<{ children: ReactNode }, { error: Error | null }> {
  state = { error: null as Error | null };
  static getDerivedStateFromError(error: Error) {
    return { error };
  }
  render() {
    if (!this.state.error) return this.props.children;
    return (
      <div role="alert" className="error-note">
        <strong>This view failed:</strong> {this.state.error.message}. Other views still work; <a href={location.href}>reload this one</a>.
      </div>
    );
  }
}
