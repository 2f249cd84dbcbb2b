# Build stage: install everything, compile TypeScript to JavaScript (scripts/build.ts: the bot, its
# migrations and the workspace packages in packages/, with the platform's Python trainer).
FROM node:22-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY packages ./packages
RUN npm ci
COPY scripts ./scripts
COPY src ./src
COPY migrations ./migrations
# npm prune drops the dev tooling (tsx, typescript, esbuild, vitest, eslint) before the copy below.
RUN npm run build && npm prune --omit=dev

# Runtime stage: compiled code and production dependencies, as a non-root user, under an init process.
FROM node:22-bookworm-slim
# tini as PID 1 forwards SIGTERM/SIGINT to the bot's parent process (which stops its web role, then
# its worker role, then the embedded PostgreSQL) and reaps exited processes. fonts-dejavu-core: the
# font the comparison chart's PNG is drawn with (src/slack/chart/render.ts).
RUN apt-get update && apt-get install -y --no-install-recommends tini fonts-dejavu-core && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production PORT=3000 DATA_DIR=/data
WORKDIR /app
COPY --from=build /app/node_modules ./node_modules
# dist/ holds the compiled workspace packages too (dist/node_modules/@verdict/*, found before the
# links in node_modules), with the bundled LoRA trainer: it needs Python 3 with torch (optional, see README).
COPY --from=build /app/dist ./dist
COPY package.json ./
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
# Slack events (HTTP mode), platform webhooks, /healthz.
EXPOSE 3000
# The first start initialises the embedded PostgreSQL and runs migrations: give it a minute.
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 CMD node -e "fetch('http://127.0.0.1:'+(process.env.PORT||3000)+'/healthz').then(r=>process.exit(r.ok?0:1)).catch(()=>process.exit(1))"
ENTRYPOINT ["/usr/bin/tini", "--"]
# Migrations run on start (src/app.ts), under an advisory lock so replicas can start together.
# Starts everything (ROLE=all): the web and worker roles as child processes. Run one role per
# container with -e ROLE=web or -e ROLE=worker (and DATABASE_URL, BENCHGEN_API_URL...).
CMD ["node", "dist/src/main.js"]
