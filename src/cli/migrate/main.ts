import { runImportMigrate } from './import-migrate.ts';

// Entry point of the import-migrate bin (bin/import-migrate.js loads it through tsx).
process.exitCode = await runImportMigrate(process.argv.slice(2), {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
  tty: process.stderr.isTTY ? process.stderr : null,
  stdout: process.stdout,
});
