// express@4 installed under the alias `express4`, for the adapter suite: same API surface.
declare module 'express4' {
  import express = require('express');
  export = express;
}
