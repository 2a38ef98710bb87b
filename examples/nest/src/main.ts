// A NestJS 11 app (CommonJS, as `nest new` makes it) behind portico: API key authentication,
// scopes and roles per route, every error as Problem Details.
// npm run build && npm start   (env: PORT, default 3018; listens on 127.0.0.1)
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { securityHeaders } from 'portico';
import { toExpress } from 'portico/express';
import { PorticoExceptionFilter } from 'portico/nest';
import { AppModule } from './app.module';
import { keysReady } from './keys';

async function bootstrap() {
  await keysReady;
  const app = await NestFactory.create(AppModule, { logger: ['error'] });
  app.use(toExpress(securityHeaders())); // portico's middleware run in Nest's Express too
  app.useGlobalFilters(app.get(PorticoExceptionFilter));
  await app.listen(Number(process.env.PORT || 3018), '127.0.0.1');
  console.log(`NestJS example on ${await app.getUrl()}`);
}
void bootstrap();
