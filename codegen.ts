// Typed GraphQL documents generated from the committed schema.graphql (`npm run codegen`, also run by
// `npm install` and `npm test`): for the tests under test/generated/, and for the explorer page under
// explorer/generated/ (as strings: the page sends them as they are, without graphql-js). Both ignored by git.
import type { CodegenConfig } from '@graphql-codegen/cli';

const config: CodegenConfig = {
  schema: 'schema.graphql',
  ignoreNoDocuments: true,
  generates: {
    'test/generated/': {
      documents: ['test/**/*.ts', '!test/generated/**'],
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
    'explorer/generated/': {
      documents: ['explorer/src/**/*.ts'],
      preset: 'client',
      presetConfig: { fragmentMasking: false },
      config: {
        documentMode: 'string',
        scalars: { JSON: 'unknown', DateTime: 'string', ID: 'string' },
        enumsAsTypes: true,
        useTypeImports: true,
        emitLegacyCommonJSImports: false,
      },
    },
  },
};

export default config;
