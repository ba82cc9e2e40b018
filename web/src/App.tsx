// The shell: who is signed in (GET /api/v0/users/current with the session cookie), the
// navigation, and the page for the current path. Signed out, every path shows the sign-in page.
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, client } from './api';
import { Button, ErrorNote, Link, navigate, usePath, usd } from './ui';
import { SignIn } from './pages/SignIn';
import { Search } from './pages/Search';
import { Instances } from './pages/Instances';
import { Hosting } from './pages/Hosting';
import { Account } from './pages/Account';
import { Volumes } from './pages/Volumes';
import { Team, TeamSwitcher } from './pages/Team';
import { TeamInvite } from './pages/TeamInvite';
import { Limits } from './pages/Limits';

const NAV = [
  { to: '/search', label: 'Search' },
  { to: '/instances', label: 'Instances' },
  { to: '/volumes', label: 'Volumes' },
  { to: '/hosting', label: 'Hosting' },
  { to: '/team', label: 'Team' },
  { to: '/limits', label: 'Limits' },
  { to: '/account', label: 'Account' },
];

export function useMe() {
  return useQuery({
    queryKey: ['me'],
    queryFn: async () => {
      try {
        return await client.currentUser();
      } catch (e) {
        if (e instanceof ApiError && (e.status === 401 || e.status === 403)) return null;
        throw e;
      }
    },
    staleTime: 30_000,
  });
}

export function App() {
  const path = usePath();
  const me = useMe();
  const qc = useQueryClient();
  const logout = useMutation({
    mutationFn: () => client.logout(),
    onSuccess: () => {
      qc.clear();
      qc.setQueryData(['me'], null);
      navigate('/signin', true);
    },
  });

  if (me.isPending) {
    return (
      <div className="boot" aria-busy="true">
        <span className="spinner" aria-hidden="true" /> Loading…
      </div>
    );
  }
  if (me.isError) {
    return (
      <main className="signin-wrap">
        <ErrorNote error={me.error} />
        <Button onClick={() => me.refetch()}>Retry</Button>
      </main>
    );
  }
  if (!me.data) return <SignIn />;
  const user = me.data;
  if (path === '/' || path === '/signin') {
    queueMicrotask(() => navigate('/search', true));
  }
  const section = '/' + (path.split('/')[1] ?? '');
  let page;
  switch (section) {
    case '/instances':
      page = <Instances />;
      break;
    case '/hosting':
      page = <Hosting />;
      break;
    case '/volumes':
      page = <Volumes />;
      break;
    case '/account':
      page = <Account path={path} />;
      break;
    case '/limits':
      page = <Limits />;
      break;
    case '/team':
      page = path.startsWith('/team/invite/') ? <TeamInvite token={path.split('/')[3] ?? ''} /> : <Team />;
      break;
    default:
      page = <Search />;
  }
  return (
    <div className="shell">
      <a className="skip" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <Link to="/search" className="brand">
          <img src="/favicon.svg" alt="" width="24" height="24" />
          <span>openrig</span>
        </Link>
        <nav aria-label="Main">
          {NAV.map((n) => (
            <Link key={n.to} to={n.to} className="nav-link" current={section === n.to}>
              {n.label}
            </Link>
          ))}
        </nav>
        <div className="who">
          <TeamSwitcher />
          <span className="who-email" title={user.email}>
            {user.email}
          </span>
          {typeof user.balance === 'number' && <span className="pill">{usd(user.balance, 2)}</span>}
          <Button variant="ghost" busy={logout.isPending} onClick={() => logout.mutate()}>
            Sign out
          </Button>
        </div>
      </header>
      {logout.isError && <ErrorNote error={logout.error} />}
      <main id="main" className="content" tabIndex={-1}>
        {page}
      </main>
    </div>
  );
}
