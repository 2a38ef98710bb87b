import {
  Body,
  Controller,
  Get,
  NotFoundException,
  Param,
  Post,
  Req,
  UseGuards,
} from '@nestjs/common';
import type { Principal } from 'portico';
import { PorticoAuthGuard, Roles, Scopes } from 'portico/nest';

interface Message {
  id: string;
  from: string;
  text: string;
}

@Controller('api')
@UseGuards(PorticoAuthGuard)
export class ApiController {
  private readonly messages: Message[] = [];

  @Get('me')
  me(@Req() req: { user: Principal }) {
    return { sub: req.user.sub, scopes: req.user.scopes };
  }

  @Get('messages')
  @Scopes('read:messages')
  list() {
    return this.messages;
  }

  @Get('messages/:id')
  @Scopes('read:messages')
  one(@Param('id') id: string) {
    const found = this.messages.find((message) => message.id === id);
    if (found === undefined) throw new NotFoundException(`No message ${id}.`);
    return found;
  }

  @Post('messages')
  @Roles('admin')
  post(@Req() req: { user: Principal }, @Body() body: { text?: unknown }) {
    const message = {
      id: String(this.messages.length + 1),
      from: req.user.sub,
      text: String(body.text),
    };
    this.messages.push(message);
    return message;
  }
}
