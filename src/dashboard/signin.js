// The sign-in form the dashboard and the report page share: an API key traded for a token pair (api.js).
import { Component, h } from './vendor/preact.js';
import htm from './vendor/htm.js';
import { signIn } from './api.js';

const html = htm.bind(h);

export class SignIn extends Component {
  submit = async (event) => {
    event.preventDefault();
    const key = event.currentTarget.elements.apikey.value.trim();
    this.setState({ busy: true, error: null });
    try {
      await signIn(key);
      this.props.onSignedIn();
    } catch (error) {
      this.setState({ busy: false, error: error.message });
    }
  };

  render({ title = 'Migration dashboard' }, { busy, error }) {
    return html`<form class="card signin" onSubmit=${this.submit} data-testid="signin">
      <h1>${title}</h1>
      <label>API key <input name="apikey" type="password" autocomplete="off" required /></label>
      <button type="submit" disabled=${busy}>Sign in</button>
      ${error && html`<p class="error" role="alert">${error}</p>`}
    </form>`;
  }
}
