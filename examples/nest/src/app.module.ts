import { Module } from '@nestjs/common';
import { apiKeyAuth, createCredentialGuard } from 'portico';
import { PorticoModule } from 'portico/nest';
import { ApiController } from './api.controller';
import { keys } from './keys';

@Module({
  imports: [
    PorticoModule.forRoot({
      authenticators: [apiKeyAuth({ store: keys })],
      // refused credentials count per client IP: after 10 in 15 minutes, 429
      guard: createCredentialGuard(),
    }),
  ],
  controllers: [ApiController],
})
export class AppModule {}
