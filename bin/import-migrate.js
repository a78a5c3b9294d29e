#!/usr/bin/env node
// The import-migrate bin (D12). Like import-admin, it runs the TypeScript client through tsx's
// loader, so `npx import-migrate …` works right after `npm install`, with no build step.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli/migrate/main.ts', import.meta.url).href);
