// Remote-plugin adapter: the Node remote-plugin host loads this directory; the logic lives in the
// built host (dist/rplugin.cjs, made by `npm run build`).
module.exports = require('../../../dist/rplugin.cjs').default;
