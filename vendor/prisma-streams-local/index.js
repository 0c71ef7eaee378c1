// The Prisma CLI depends on @prisma/dev, which depends on @prisma/streams-local, which needs
// Node >= 22 and is only loaded by `prisma dev` (a local Prisma Postgres server). This project
// never runs `prisma dev` (it embeds PGlite), so package.json's overrides put this stand-in in its
// place: `npm install` on Node 20 prints no engine warning, and `prisma dev` fails with this message.
const unavailable = () => {
  throw new Error(
    'session-graph: `prisma dev` is not supported here (@prisma/streams-local needs Node >= 22); the server embeds PGlite instead.',
  );
};

export const startLocalDurableStreamsServer = unavailable;
export default unavailable;
