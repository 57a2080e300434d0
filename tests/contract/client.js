// The contract test's Node.js client: loads the proto at run time with @grpc/proto-loader, the way a JavaScript
// user would, makes the calls given as JSON on stdin in order, and prints each answer (or status) as JSON.
//   node client.js TARGET PROTO_ROOT < calls.json
// A call is {"method": "Dedup", "request": {...}} (or Upsert, Delete, Info, FindSimilar), answered {"response": ...}
// or {"code", "details"}; a Document's sketch travels as "sketch_base64" (in "documents", or FindSimilar's
// "document"). A streaming call is {"method": "DedupStream", "requests": [...]}: one stream, every request written
// at once (gRPC sends them while the answers come back), then half-closed; answered {"responses": [...]}, with
// "code" and "details" too when the stream ended with another status than OK.
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
  for (const doc of [...(request.documents || []), ...(request.document ? [request.document] : [])]) {
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

function stream(method, requests) {
  return new Promise((resolve) => {
    const responses = [];
    let status = null;
    let ended = false;
    const settle = () => {
      if (status === null || !ended) return;  // every answer read, and the stream's status known
      resolve(status.code === grpc.status.OK ? { responses }
        : { responses, code: grpc.status[status.code], details: status.details });
    };
    const call = client[method]({ deadline: Date.now() + 10000 });
    call.on("data", (response) => responses.push(response));
    call.on("end", () => { ended = true; settle(); });
    call.on("error", () => {});  // a status other than OK: "status" tells it
    call.on("status", (received) => { status = received; settle(); });
    for (const request of requests) call.write(withBytes(request));
    call.end();
  });
}

(async () => {
  const calls = JSON.parse(fs.readFileSync(0, "utf8"));
  const answers = [];
  for (const { method, request, requests } of calls) {
    answers.push(await (requests ? stream(method, requests) : call(method, request)));
  }
  client.close();
  process.stdout.write(JSON.stringify(answers));
})();
