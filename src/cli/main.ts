import { runImportAdmin } from './import-admin.ts';

// Entry point of the import-admin bin (bin/import-admin.js loads it through tsx).
process.exitCode = await runImportAdmin(process.argv.slice(2), {
  env: process.env,
  out: (text) => process.stdout.write(text),
  err: (text) => process.stderr.write(text),
});
