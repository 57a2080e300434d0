// The contract test's Node.js client: loads the proto at run time with @grpc/proto-loader, the way a JavaScript
// user would, makes the calls given as JSON on stdin in order, and prints each answer (or status) as JSON.
//   node client.js TARGET PROTO_ROOT < calls.json
// A call is {"method": "Dedup", "request": {...}}; a Document's sketch travels as "sketch_base64".
"use strict";
const fs = require("fs");
const grpc = require("@grpc/grpc-js");
const protoLoader = require("@grpc/proto-loader");

const [target, protoRoot] = process.argv.slice(2);
// The options the README recommends: field names as in the proto, enums as names, uint64 as strings, and
// default values present (an empty list or 0 is an answer, not a missing field).
const definition = protoLoader.loadSync("neardup/v1/neardup.proto", {
  includeDirs: [protoRoot], keepCase: true, enums: String, longs: String, defaults: true, oneofs: true,
});
const NearDup = grpc.loadPackageDefinition(definition).neardup.v1.NearDup;
const client = new NearDup(target, grpc.credentials.createInsecure());

function withBytes(request) {
  for (const doc of request.documents || []) {
    if (doc.sketch_base64 !== undefined) {
      doc.sketch = Buffer.from(doc.sketch_base64, "base64");
      delete doc.sketch_base64;
    }
  }
  return request;
}

function call(method, request) {
  return new Promise((resolve) => {
    client[method](withBytes(request), { deadline: Date.now() + 10000 }, (error, response) => {
      resolve(error ? { code: grpc.status[error.code], details: error.details } : { response });
    });
  });
}

(async () => {
  const calls = JSON.parse(fs.readFileSync(0, "utf8"));
  const answers = [];
  for (const { method, request } of calls) answers.push(await call(method, request));
  client.close();
  process.stdout.write(JSON.stringify(answers));
})();
