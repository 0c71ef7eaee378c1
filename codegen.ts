// Typed GraphQL documents for the tests, generated from the committed schema.graphql
// (`npm run codegen`, also run by `npm install`). Output under test/generated/, ignored by git.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema.graphql',
  documents: ['test/**/*.ts', '!test/generated/**'],
  ignoreNoDocuments: true,
  generates: {
    'test/generated/': {
      preset: 'client',
      // persistedDocuments: also writes persisted-documents.json (sha256 → document), the manifest
      // a frontend hands to TRUSTED_DOCUMENTS; the trusted documents test runs the suite's documents through it.
      presetConfig: { fragmentMasking: false, persistedDocuments: { hashAlgorithm: 'sha256' } },
      config: {
        scalars: { JSON: 'unknown', DateTime: 'string', ID: 'string' },
        enumsAsTypes: true,
        useTypeImports: true,
        emitLegacyCommonJSImports: false,
      },
    },
  },
};

export default config;
