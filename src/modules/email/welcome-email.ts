// The welcome email a customer receives when their account is migrated (D6). Plain text only: it is
// composed at creation and stored in the outbox as sent, so a template change never alters a queued email.
export interface WelcomeEmail { recipient: string; subject: string; body: string }

export function welcomeEmail(customer: { given_name: string; email?: string | undefined }, accountNumber: string): WelcomeEmail | null {
  const recipient = customer.email?.trim();
  if (!recipient) return null;
  return {
    recipient,
    subject: `Welcome: your account ${accountNumber} is ready`,
    body: [
      `Dear ${customer.given_name},`,
      '',
      `Your account has moved to us. Your new account number is ${accountNumber}.`,
      'Your supply continues as before; there is nothing you need to do.',
      '',
      'Kind regards,',
      'Customer support',
    ].join('\n'),
  };
}
