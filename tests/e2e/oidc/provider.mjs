// The OpenID Connect provider of the browser tests: npm's oidc-provider on the loopback
// address, with its development login form (any password; the login names the test account)
// and one client, the app under test. Configured by environment variables (tests/e2e/oidc.py):
//   OIDC_PORT, OIDC_CLIENT_ID, OIDC_CLIENT_SECRET, OIDC_REDIRECT_URI,
//   OIDC_ACCOUNTS: JSON {"login": {"email": "...", "name": "..."}, ...}
// Prints "ready <issuer>" once it listens.
import Provider from 'oidc-provider';

const port = Number(process.env.OIDC_PORT);
const accounts = JSON.parse(process.env.OIDC_ACCOUNTS);
const issuer = `http://127.0.0.1:${port}`;

const provider = new Provider(issuer, {
  clients: [{
    client_id: process.env.OIDC_CLIENT_ID,
    client_secret: process.env.OIDC_CLIENT_SECRET,
    redirect_uris: [process.env.OIDC_REDIRECT_URI],
    post_logout_redirect_uris: [process.env.OIDC_REDIRECT_URI],
    response_types: ['code'],
    grant_types: ['authorization_code'],
  }],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Streamlit reads who signed in from the ID token alone: put the claims there.
  conformIdTokenClaims: false,
  features: { devInteractions: { enabled: true } },
  cookies: { keys: ['epsilon-lab-test-provider'] },
  async findAccount(ctx, id) {
    const account = accounts[id];
    if (account === undefined) return undefined;
    return {
      accountId: id,
      async claims() {
        return { sub: id, email: account.email, email_verified: true, name: account.name };
      },
    };
  },
});
// The tests run on plain http on the loopback address.
provider.proxy = false;

provider.listen(port, '127.0.0.1', () => {
  console.log(`ready ${issuer}`);
});
