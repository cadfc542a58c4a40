// minibroker console: sparklines, the lag chart, live tail and the value format switch.
// No framework and no build step; every element is found by the ids pages.py renders.
"use strict";

const SVG_NS = "http://www.w3.org/2000/svg";

function drawLine(svg, values, width, height) {
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  if (values.length < 2) return;
  const max = Math.max(...values, 1) * 1.15;
  const step = width / (values.length - 1);
  const points = values
    .map((v, i) => `${(i * step).toFixed(1)},${(height - 2 - (v / max) * (height - 4)).toFixed(1)}`)
    .join(" ");
  const area = document.createElementNS(SVG_NS, "polygon");
  area.setAttribute("points", `0,${height} ${points} ${width},${height}`);
  area.setAttribute("class", "area");
  svg.appendChild(area);
  const line = document.createElementNS(SVG_NS, "polyline");
  line.setAttribute("points", points);
  line.setAttribute("class", "line");
  svg.appendChild(line);
  const label = document.createElementNS(SVG_NS, "text");
  label.setAttribute("x", "4");
  label.setAttribute("y", "12");
  label.setAttribute("class", "max");
  label.textContent = `max ${formatNumber(Math.max(...values))}`;
  svg.appendChild(label);
}

function formatNumber(value) {
  if (value >= 1e6) return (value / 1e6).toFixed(1) + "M";
  if (value >= 1e3) return (value / 1e3).toFixed(1) + "k";
  return String(Math.round(value * 10) / 10);
}

async function getJson(url) {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`${response.status} ${url}`);
  return response.json();
}

function every(ms, action) {
  action();
  return setInterval(action, ms);
}

// ---- overview: throughput sparklines ---------------------------------------------------------

function startSparklines() {
  const svgs = document.querySelectorAll("svg.sparkline");
  if (!svgs.length) return;
  every(1000, async () => {
    try {
      const data = await getJson("/api/throughput");
      for (const svg of svgs) {
        const series = svg.dataset.series;
        const values = data.throughput.map((point) => point[series]);
        drawLine(svg, values, 300, 60);
        const current = document.getElementById(svg.id.replace("sparkline-", "rate-"));
        if (current && values.length) current.textContent = formatNumber(values[values.length - 1]);
      }
    } catch (error) {
      console.warn(error);
    }
  });
}

// ---- group page: lag values and chart -----------------------------------------------------------

function startLagChart() {
  const chart = document.getElementById("lag-chart");
  if (!chart) return;
  const draw = (history) => drawLine(chart, history.map((point) => point.lag), 600, 150);
  draw(JSON.parse(chart.dataset.history || "[]"));
  const url = "/api/groups/" + encodeURIComponent(chart.dataset.group);
  setInterval(async () => {
    try {
      const group = await getJson(url);
      draw(group.lag_history);
      document.getElementById("group-lag").textContent = group.lag;
      document.getElementById("group-state").textContent = group.state;
      for (const offset of group.offsets) {
        const row = document.querySelector(
          `tr[data-testid="offset-row"][data-topic="${CSS.escape(offset.topic)}"]` +
            `[data-partition="${offset.partition}"]`
        );
        if (!row) continue;
        row.querySelector('[data-testid="lag-value"]').textContent =
          offset.lag === null ? "" : offset.lag;
        row.children[2].textContent = offset.committed_offset;
        row.children[3].textContent = offset.log_end_offset === null ? "" : offset.log_end_offset;
      }
    } catch (error) {
      console.warn(error);
    }
  }, 2000);
}

// ---- messages page: value format and live tail ---------------------------------------------------

function startValueFormat() {
  const chooser = document.getElementById("value-format");
  const table = document.getElementById("messages-table");
  if (!chooser || !table) return;
  chooser.addEventListener("change", () => {
    table.classList.remove("format-utf8", "format-json", "format-hex");
    table.classList.add("format-" + chooser.value);
  });
}

function valueCell(view, testid) {
  const cell = document.createElement("td");
  cell.dataset.testid = testid;
  if (view === null) {
    cell.className = "null";
    cell.textContent = "null";
    return cell;
  }
  cell.dataset.size = view.size;
  if (view.schema) {
    cell.dataset.schemaId = view.schema.id;
    cell.dataset.schemaType = view.schema.type;
    cell.title = `${view.schema.type} schema ${view.schema.id} (${view.schema.subject})`;
  }
  const more = view.truncated ? " …" : "";
  const text = view.utf8 === null ? "(not UTF-8)" : view.utf8;
  const parts = [
    ["span", "v-utf8", text],
    ["pre", "v-json", view.json === null ? text : view.json],
    ["code", "v-hex", view.hex],
  ];
  for (const [tag, cls, content] of parts) {
    const element = document.createElement(tag);
    element.className = cls;
    element.dataset.testid = `${testid}-${cls.slice(2)}`;
    element.textContent = content + (cls === "v-hex" ? "" : more);
    cell.appendChild(element);
  }
  return cell;
}

function textCell(text, testid) {
  const cell = document.createElement("td");
  cell.dataset.testid = testid;
  cell.textContent = text;
  return cell;
}

function messageRow(record) {
  const row = document.createElement("tr");
  row.dataset.testid = "message-row";
  row.dataset.partition = record.partition;
  row.dataset.offset = record.offset;
  row.className = "fresh";
  const headers = {};
  for (const header of record.headers) {
    headers[header.key] = header.value === null ? null : header.value.utf8;
  }
  row.append(
    textCell(record.partition, "message-partition"),
    textCell(record.offset, "message-offset"),
    textCell(record.time, "message-timestamp"),
    valueCell(record.key, "message-key"),
    valueCell(record.value, "message-value"),
    textCell(record.headers.length ? JSON.stringify(headers) : "", "message-headers")
  );
  return row;
}

function startTail() {
  const toggle = document.getElementById("tail-toggle");
  const table = document.getElementById("messages-table");
  const status = document.getElementById("tail-status");
  if (!toggle || !table) return;
  let timer = null;
  let positions = table.dataset.positions;
  const base = "/api/topics/" + encodeURIComponent(table.dataset.topic) + "/messages";
  const poll = async () => {
    const query = new URLSearchParams({ partition: table.dataset.partition, after: positions });
    try {
      const result = await getJson(`${base}?${query}`);
      const body = table.tBodies[0];
      for (const record of result.records) body.appendChild(messageRow(record));
      positions = Object.entries(result.next_offsets)
        .map(([partition, offset]) => `${partition}:${offset}`)
        .join(",");
      const empty = document.querySelector('[data-testid="messages-empty"]');
      if (empty && result.records.length) empty.remove();
      status.textContent = `tailing · ${new Date().toLocaleTimeString()}`;
    } catch (error) {
      status.textContent = `tail failed: ${error.message}`;
    }
  };
  toggle.addEventListener("change", () => {
    if (toggle.checked) {
      timer = every(1000, poll);
    } else {
      clearInterval(timer);
      timer = null;
      status.textContent = "";
    }
  });
}

document.addEventListener("DOMContentLoaded", () => {
  startSparklines();
  startLagChart();
  startValueFormat();
  startTail();
});
