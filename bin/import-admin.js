#!/usr/bin/env node
// The import-admin bin (D2). It runs the TypeScript CLI through tsx's loader, so
// `npx import-admin …` works right after `npm install`, with no build step.
import { register } from 'tsx/esm/api';

register();
await import(new URL('../src/cli/main.ts', import.meta.url).href);
