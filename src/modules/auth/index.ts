// The auth module's surface: the token service (built once by the composition root) and the failed-authentication throttle.
export { type AuthThrottle, createAuthThrottle } from './auth-throttle.service.ts';
export { createTokenService, type TokenPair, type TokenService } from './token.service.ts';
