/** Who is calling: the organisation a token (or a job) acts for, and the API key it came from. */
export interface Caller { organisationId: number; apiKeyId: number }
